"""Kafka Connect with Iceberg's sink connector as a real writer of a landing table, for tests.

Given the tests' broker (`kafka`), REST catalog (`rest_catalog`, its warehouse in moto's S3) and moto
(`moto`): `sink_worker` starts a Connect worker whose S3 credentials are moto's, `create_landing_table`
(the simulated sink's, `devtools/generator/iceberg_landing.py`) creates the table in the sink's shape with
PyIceberg, `start_landing_sink` creates the control topic and the connector and waits for its task to run,
`produce_json` writes the records, and `wait_for_rows` polls the table until the sink has committed them,
returning its snapshots.

What a Kafka Connect archive's ingestion is judged by, whichever writer landed it (the S3 sink's files or
Iceberg's sink's table): `settled_by_day` (each day's `settled` verdict) and `assert_events_are_the_truth`
(every event kept, with its Kafka partition, offset and day).

The landing table: `payload string` (a JSON object the producer sent under `payload` lands as its JSON text,
a JSON string as that string) and the four `_kafka_metadata_*` columns, the timestamp a `timestamptz` (the
sink converts the record's epoch milliseconds), partitioned by `hour(_kafka_metadata_timestamp)`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

# The landing table in the sink's shape, as a team pre-creates it: the simulated sink's, one definition.
from backfill_platform.devtools.generator.iceberg_landing import (  # noqa: F401 - re-exported
    create_landing_table,
    landing_schema,
)
from backfill_platform.devtools.generator.kafka_connect import KafkaConnectTruth
from backfill_platform.devtools.kafka_connect.iceberg_sink import control_topic_for, iceberg_sink_config
from backfill_platform.devtools.kafka_connect.worker import ConnectWorker, connect_worker
from backfill_platform.pipeline.names import events_table
from backfill_platform.specs.stream import StreamSpec
from backfill_platform_tests.support.moto import MotoServer
from backfill_platform_tests.support.processes import wait_until


@dataclass(frozen=True)
class CommittedSnapshot:
    """One snapshot of the landing table: what the sink's commit appended (`summary["added-records"]`)."""

    snapshot_id: int
    parent_id: int | None
    operation: str
    summary: dict[str, str]
    timestamp_ms: int


@dataclass(frozen=True)
class JsonRecord:
    """One record to produce: the value a JSON object, the key a JSON value (the worker's key converter
    is the JsonConverter too: a key that is no JSON fails the task), the timestamp the record's CreateTime
    in epoch milliseconds (None: the producer's clock)."""

    value: Mapping[str, Any]
    key: Any = None
    partition: int | None = None
    timestamp_ms: int | None = None


def pyiceberg_catalog(catalog_uri: str, warehouse: str, moto: MotoServer) -> Any:
    """A PyIceberg client of the REST catalog, reading and writing the warehouse in moto's S3."""
    from pyiceberg.catalog.rest import RestCatalog

    return RestCatalog(
        "landing",
        uri=catalog_uri,
        warehouse=warehouse,
        **{
            "s3.endpoint": moto.endpoint_url,
            "s3.region": moto.region,
            "s3.access-key-id": moto.env()["AWS_ACCESS_KEY_ID"],
            "s3.secret-access-key": moto.env()["AWS_SECRET_ACCESS_KEY"],
            "s3.force-virtual-addressing": "false",
        },
    )


@contextmanager
def sink_worker(state_dir: Path, bootstrap: str, moto: MotoServer) -> Iterator[ConnectWorker]:
    """A Connect worker on the broker `bootstrap`, its S3 credentials and region moto's (environment only)."""
    env = {**os.environ, **moto.env()}
    with connect_worker(state_dir, bootstrap, env=env) as worker:
        yield worker


def start_landing_sink(
    worker: ConnectWorker,
    name: str,
    *,
    bootstrap: str,
    topic: str,
    table: str,
    catalog_uri: str,
    warehouse: str,
    moto: MotoServer,
    auto_create: bool = False,
    extra: Mapping[str, str] | None = None,
    timeout: float = 60,
) -> dict[str, str]:
    """Create the sink's control topic if missing (one partition), then the connector (or give it this
    configuration again: a worker started again resumes from the offsets the sink committed); returns once
    its task runs (raises with the task's trace if it fails). Returns the connector's configuration.

    The control topic is never recreated: the coordinator records its offsets in the table's snapshots and
    ignores every control event below them, so a fresh control topic under a table the sink already wrote
    would stall its commits."""
    control_topic = control_topic_for(topic)
    ensure_topic(bootstrap, control_topic, partitions=1)
    config = iceberg_sink_config(
        topic,
        table,
        catalog_uri,
        warehouse,
        moto.endpoint_url,
        control_topic=control_topic,
        extra=extra,
        region=moto.region,
        bootstrap=bootstrap,
        auto_create=auto_create,
    )
    worker.put_connector(name, config)
    wait_until_running(worker, name, timeout)
    return config


def ensure_topic(bootstrap: str, name: str, partitions: int = 1) -> None:
    """Create the topic unless it exists (the tests' broker creates none on its own)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    if name not in admin.list_topics(timeout=10).topics:
        admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)


def wait_until_running(worker: ConnectWorker, name: str, timeout: float = 60) -> dict[str, Any]:
    """The connector's status once it and every task run; raises with the first failed task's trace, and
    fails the test if they do not run within `timeout` seconds."""
    status: dict[str, Any] = {}

    def running() -> dict[str, Any] | None:
        nonlocal status
        try:
            status = worker.status(name)
        except RuntimeError:  # 404 until the worker has created the connector
            status = {}
        raise_if_failed(status, worker)
        states = [status.get("connector", {}).get("state")] + [
            task["state"] for task in status.get("tasks", [])
        ]
        return status if len(states) > 1 and set(states) == {"RUNNING"} else None

    return wait_until(
        running,
        timeout=timeout,
        every=0.2,
        what=lambda: f"connector {name} running: {status}; log {worker.log_path}",
    )


def raise_if_failed(status: Mapping[str, Any], worker: ConnectWorker) -> None:
    """Raise with the trace of the connector or of a task that failed."""
    for part in [status.get("connector", {}), *status.get("tasks", [])]:
        if part.get("state") == "FAILED":
            trace = part.get("trace", "")
            raise RuntimeError(
                f"connector {status.get('name')} failed ({part}); log {worker.log_path}:\n{trace}"
            )


def produce_json(bootstrap: str, topic: str, records: Iterable[JsonRecord]) -> int:
    """Produce the records (idempotent, acks from every replica) and wait for each to be acknowledged;
    returns their number. Raises naming the first record the broker refused."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    errors: list[str] = []

    def delivered(error, message) -> None:
        if error is not None and not errors:
            errors.append(f"{message.key()!r}: {error}")

    count = 0
    for record in records:
        options: dict[str, Any] = {}
        if record.partition is not None:
            options["partition"] = record.partition
        if record.timestamp_ms is not None:
            options["timestamp"] = record.timestamp_ms
        key = None if record.key is None else json.dumps(record.key).encode()
        producer.produce(topic, json.dumps(record.value).encode(), key, on_delivery=delivered, **options)
        producer.poll(0)
        count += 1
    remaining = producer.flush(60)
    if remaining or errors:
        raise RuntimeError(f"{remaining} records not acknowledged; first refused: {errors[:1]}")
    return count


def wait_for_rows(
    catalog: Any, table: str, n: int, timeout: float = 60, worker: ConnectWorker | None = None
) -> list[CommittedSnapshot]:
    """Poll the table until it holds exactly `n` rows (counted by a scan of its current snapshot); returns
    its snapshots, oldest first. Raises if it holds more (a record landed twice), fails the test if it
    still holds fewer at the deadline; with `worker`, raises as soon as one of its connectors' tasks failed
    (naming its trace)."""
    from pyiceberg.exceptions import NoSuchTableError

    loaded: Any = None
    rows = 0

    def holds_n_rows() -> Any:
        nonlocal loaded, rows
        try:
            loaded = catalog.load_table(table)
        except NoSuchTableError:  # a table the sink creates from its first records
            loaded = None
        rows = loaded.scan().count() if loaded is not None and loaded.current_snapshot() else 0
        if loaded is not None and rows == n:
            return loaded
        if loaded is not None and rows > n:
            raise AssertionError(
                f"{table} holds {rows} rows, more than the {n} produced: {snapshots(loaded)}"
            )
        if worker is not None:
            for name in worker.connectors():
                raise_if_failed(worker.status(name), worker)
        return None

    def state() -> str:
        return (
            f"{table} holding {n} rows: it holds {rows} "
            f"({len(loaded.snapshots()) if loaded is not None else 'no table, 0'} snapshots)"
            + (f"; log {worker.log_path}" if worker is not None else "")
        )

    return snapshots(wait_until(holds_n_rows, timeout=timeout, every=0.5, what=state))


def snapshots(table: Any) -> list[CommittedSnapshot]:
    """The table's snapshots, oldest first, with their summaries as plain dicts."""
    return [
        CommittedSnapshot(
            snapshot.snapshot_id,
            snapshot.parent_snapshot_id,
            snapshot.summary.operation.value if snapshot.summary else "",
            dict(snapshot.summary.additional_properties) if snapshot.summary else {},
            snapshot.timestamp_ms,
        )
        for snapshot in sorted(table.snapshots(), key=lambda s: (s.sequence_number, s.timestamp_ms))
    ]


# --- judging what the platform ingested from a Kafka Connect archive ------------------------------------


def assert_events_are_the_truth(spark: SparkSession, spec: StreamSpec, truth: KafkaConnectTruth) -> None:
    """The stream's events table holds exactly the truth's events, each with its Kafka partition, offset
    and event day."""
    rows = spark.table(events_table(spark, spec)).select(
        "event_id", "_kafka_partition", "_kafka_offset", F.to_date("event_time").alias("day")
    )
    got = {
        r["event_id"]: (r["_kafka_partition"], r["_kafka_offset"], r["day"].isoformat())
        for r in rows.collect()
    }
    assert got == truth.events
