"""A landing table as Iceberg's Kafka Connect sink writes it, and its exact truth.

The sink (`org.apache.iceberg.connect.IcebergSinkConnector` with `KafkaMetadataTransform`) appends each
consumed record as a row: the record (here one `payload` column holding the event as JSON text, as the
sink stores a nested object in a string column) and the record's Kafka metadata in flat columns
`_kafka_metadata_{topic,partition,offset,timestamp}`. Its coordinator commits one `append` snapshot per
commit interval, with `kafka.connect.*` properties in the snapshot summary. This writes the same shape
with PyIceberg, one append per ingestion hour, from the topic `kafka_connect.arrivals` describes (the
events, schema change, retries and late arrivals of the Kafka Connect S3 archive), so both archives of
one topic can be compared.
"""

from __future__ import annotations

import json
import uuid
from collections import defaultdict
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from backfill_platform.devtools.generator.kafka_connect import KafkaConnectTruth, arrivals

COLUMNS = (
    "payload",
    "_kafka_metadata_topic",
    "_kafka_metadata_partition",
    "_kafka_metadata_offset",
    "_kafka_metadata_timestamp",
)


def landing_schema() -> Any:
    from pyiceberg.schema import Schema
    from pyiceberg.types import IntegerType, LongType, NestedField, StringType, TimestamptzType

    return Schema(
        NestedField(1, "payload", StringType(), required=False),
        NestedField(2, "_kafka_metadata_topic", StringType(), required=False),
        NestedField(3, "_kafka_metadata_partition", IntegerType(), required=False),
        NestedField(4, "_kafka_metadata_offset", LongType(), required=False),
        NestedField(5, "_kafka_metadata_timestamp", TimestamptzType(), required=False),
    )


def create_landing_table(catalog: Any, identifier: str) -> Any:
    """The landing table as a team pre-creates it for the sink: hourly partitions of the Kafka timestamp
    and full metrics on the metadata columns (so every file lies in one ingestion hour)."""
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import HourTransform

    namespace = identifier.split(".")[0]
    catalog.create_namespace_if_not_exists(namespace)
    if catalog.table_exists(identifier):
        catalog.drop_table(identifier)
    return catalog.create_table(
        identifier,
        schema=landing_schema(),
        partition_spec=PartitionSpec(PartitionField(5, 1000, HourTransform(), "ingestion_hour")),
        properties={
            "format-version": "2",
            **{f"write.metadata.metrics.column.{name}": "full" for name in COLUMNS[1:]},
        },
    )


def sink_rows(
    start: date,
    days: int,
    events_per_day: int,
    *,
    topic: str = "playback",
    partitions: int = 3,
    seed: int = 3,
) -> tuple[list[dict], KafkaConnectTruth]:
    """Every row the sink writes for the topic, in offset order per partition, and the truth."""
    truth = KafkaConnectTruth()
    rows = []
    for partition, records in arrivals(start, days, events_per_day, partitions, seed).items():
        for offset, (ingested, record) in enumerate(records):
            rows.append(sink_row(topic, partition, offset, ingested, json.dumps(record)))
            truth.add(record, partition, offset, start + timedelta(days=days))
    return rows, truth


def sink_row(topic: str, partition: int, offset: int, at: datetime, payload: str | None) -> dict:
    return {
        "payload": payload,
        "_kafka_metadata_topic": topic,
        "_kafka_metadata_partition": partition,
        "_kafka_metadata_offset": offset,
        "_kafka_metadata_timestamp": at,
    }


def append_commits(table: Any, rows: list[dict]) -> list[int]:
    """Append `rows` as the sink's coordinator commits them: one `append` per ingestion hour, with the
    sink's summary properties. Returns the snapshot ids."""
    import pyarrow as pa

    by_hour: dict[datetime, list[dict]] = defaultdict(list)
    for row in rows:
        by_hour[row["_kafka_metadata_timestamp"].replace(minute=0, second=0, microsecond=0)].append(row)
    arrow = table.schema().as_arrow()
    snapshots = []
    for hour, batch in sorted(by_hour.items()):
        data = pa.Table.from_pylist(batch, schema=arrow)
        table.append(
            data,
            snapshot_properties={
                "kafka.connect.commit-id": str(uuid.uuid4()),
                "kafka.connect.task-id": "playback-sink-0",
                "kafka.connect.valid-through-ts": (hour + timedelta(hours=1)).isoformat(),
            },
        )
        snapshots.append(table.current_snapshot().snapshot_id)
    return snapshots


def land_folder_archive(table: Any, root: Path, layout: str, topic: str) -> int:
    """Copy a folder archive into the landing table, one append per ingestion hour: each record a row
    whose payload is the record's text and whose Kafka timestamp lies in its folder's hour (one
    millisecond apart, in file and record order), on one partition with contiguous offsets. Returns rows.

    The same records, the same ingestion hours: a folder archive and its landed table must give the
    platform the same events."""
    from backfill_platform.pipeline.archive.listing import hour_of
    from backfill_platform.pipeline.archive.records import iter_records

    rows: list[dict] = []
    for folder in sorted(
        {p.parent for p in root.rglob("*") if p.is_file() and not p.name.startswith((".", "_"))}
    ):
        hour = hour_of(str(folder.relative_to(root)), layout)
        if hour is None:
            continue
        position = 0
        for path in sorted(folder.iterdir()):
            if path.name.startswith((".", "_")) or not path.is_file():
                continue
            for _number, text, _raw, _defect, _detail in iter_records(str(path)):
                rows.append(sink_row(topic, 0, len(rows), hour + timedelta(milliseconds=position), text))
                position += 1
    append_commits(table, rows)
    return len(rows)
