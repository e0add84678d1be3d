"""Apache Kafka's broker from Maven Central's jars, for the tests and `make kafka` (replay to a topic)."""
