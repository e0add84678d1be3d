"""Apache Iceberg's REST catalog server, from Maven Central's parts: for the team tier's tests and `make rest-catalog`."""
