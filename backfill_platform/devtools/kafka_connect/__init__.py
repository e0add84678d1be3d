"""Apache Kafka Connect's worker and Apache Iceberg's sink connector, from Maven Central's jars: for tests."""
