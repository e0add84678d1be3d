"""The configuration of Apache Iceberg's sink connector (1.12) that lands a topic of schemaless JSON values in
one table of an Iceberg REST catalog whose warehouse is in S3.

Each record's value (a JSON object) becomes a row, its top-level fields the columns of the same names;
`KafkaMetadataTransform` adds where it came from as four flat columns: `_kafka_metadata_topic` (string),
`_kafka_metadata_partition` (int), `_kafka_metadata_offset` (long) and `_kafka_metadata_timestamp` (the
record's Kafka timestamp, the producer's CreateTime unless the topic keeps LogAppendTime, in epoch
milliseconds: a `long` column when the sink creates the table, converted when the table has a `timestamptz`
there). A `string` column takes any JSON value: a string as it is, anything else as JSON text written again
from the parsed value (compact, object keys in hash order, integers beyond 64 bits wrapped): equal as JSON,
not as bytes. A top-level field the table lacks becomes a new optional column (`evolve-schema-enabled`).

A record the worker cannot turn into a map (a key or value that is no JSON, a value that is no JSON object)
fails the task before anything of its batch is committed, unless the connector tolerates errors
(`errors.tolerance=all`, with `errors.deadletterqueue.topic.name` to keep them): such records, and null
values (tombstones), leave gaps in `_kafka_metadata_offset`.

The sink commits through a control topic: every `commit_interval_ms` its coordinator asks the tasks for their
data files, and each task answers in one Kafka transaction that also commits its consumer group's offsets;
the coordinator then appends one snapshot per commit. So the broker must run transactions (one broker:
`transaction.state.log.replication.factor=1`, `min.isr=1`, as `kafka_broker` is configured) and the control
topic must exist before the connector starts when the broker creates no topics (one partition is enough).
The control topic belongs to the table: the coordinator records its offsets in each snapshot's summary and
ignores control events below them, so it must not be recreated under a table the sink has written.
"""

from __future__ import annotations

from collections.abc import Mapping

from backfill_platform.devtools.kafka_connect.worker import METADATA_TRANSFORM_CLASS, SINK_CONNECTOR_CLASS

S3_FILE_IO = "org.apache.iceberg.aws.s3.S3FileIO"
METADATA_FIELD = "_kafka_metadata"
METADATA_COLUMNS = tuple(f"{METADATA_FIELD}_{name}" for name in ("topic", "partition", "offset", "timestamp"))


def control_topic_for(topic: str) -> str:
    """The control topic of the sink that lands `topic` (one per sink: a connector reads every event of
    its control topic and keeps those of its own consumer group)."""
    return f"control-iceberg-{topic}"


def iceberg_sink_config(
    topic: str,
    table: str,
    catalog_uri: str,
    warehouse: str,
    s3_endpoint: str,
    control_topic: str = "",
    commit_interval_ms: int = 1000,
    extra: Mapping[str, str] | None = None,
    *,
    region: str = "",
    bootstrap: str = "",
    auto_create: bool = False,
    tasks: int = 1,
    file_io: str = S3_FILE_IO,
) -> dict[str, str]:
    """The connector's configuration (without its `name`, which `ConnectWorker.put_connector` adds).

    `table` is `namespace.table`; with `auto_create` the sink creates it from the first records (format
    version 2, every column optional, integers as `long`), else it must exist. `control_topic` defaults to
    `control_topic_for(topic)`. `bootstrap` sets the sink's own Kafka clients' `bootstrap.servers` (else the
    sink reads it from the worker's properties file, found through the JVM's command line: that fails
    silently when the file's path has a space). `extra` is added last (it may override any key).
    `file_io` is the FileIO class (empty: the catalog's default, e.g. for a `file://` warehouse).
    S3 credentials are not here: the worker's environment gives them."""
    config = {
        "connector.class": SINK_CONNECTOR_CLASS,
        "tasks.max": str(tasks),
        "topics": topic,
        # A new consumer group reads the topic from its start (Connect's default is the end).
        "consumer.override.auto.offset.reset": "earliest",
        "iceberg.tables": table,
        "iceberg.tables.evolve-schema-enabled": "true",
        "iceberg.catalog.type": "rest",
        "iceberg.catalog.uri": catalog_uri,
        "iceberg.catalog.warehouse": warehouse,
        "iceberg.control.topic": control_topic or control_topic_for(topic),
        "iceberg.control.commit.interval-ms": str(commit_interval_ms),
        # The control consumer of a new group reads the control topic from its start (the default: its end).
        "iceberg.kafka.auto.offset.reset": "earliest",
        "transforms": "kafka",
        "transforms.kafka.type": METADATA_TRANSFORM_CLASS,
    }
    if file_io:
        config["iceberg.catalog.io-impl"] = file_io
    if s3_endpoint:
        config["iceberg.catalog.s3.endpoint"] = s3_endpoint
        config["iceberg.catalog.s3.path-style-access"] = "true"
    if region:
        config["iceberg.catalog.client.region"] = region
    if bootstrap:
        config["iceberg.kafka.bootstrap.servers"] = bootstrap
    if auto_create:
        config["iceberg.tables.auto-create-enabled"] = "true"
        config["iceberg.tables.auto-create-props.format-version"] = "2"
    config.update(extra or {})
    return config
