"""The real writer: Apache Kafka Connect running Apache Iceberg's sink connector lands a topic in an Iceberg
table of a team's REST catalog (its warehouse in S3), and the platform reads that table as a stream's
archive (`archive.iceberg_table` in the named catalog `landing`), its own tables staying in its catalog.

The topic is the Kafka Connect archive's (`generator/kafka_connect.arrivals`: two days over three
partitions, a schema change, producer retries, late arrivals), produced with each record's Kafka
timestamp; a fourth partition holds one malformed payload. The first day and a half is produced and
committed by the sink before the rest, a late batch of later commits. Expectations come from the records
produced and the offsets the broker gave them, never from the platform.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pyiceberg.expressions import And, EqualTo, GreaterThanOrEqual, LessThanOrEqual
from pyspark.sql import functions as F

from backfill_platform import settings
from backfill_platform.components.registry import demo_spec_data
from backfill_platform.devtools.generator.kafka_connect import KafkaConnectTruth, arrivals
from backfill_platform.lakehouse.resources import ARCHIVE_CATALOG_ENV
from backfill_platform.pipeline.events.assets import build_events_asset
from backfill_platform.pipeline.hour_mapping import ReadWindow
from backfill_platform.pipeline.names import events_table, quarantine_table
from backfill_platform.specs.durations import day_bounds
from backfill_platform.specs.stream import StreamSpec
from backfill_platform_tests.support.datasets import run, settled_by_day
from backfill_platform_tests.support.kafka import create_topic
from backfill_platform_tests.support.kafka_connect import (
    JsonRecord,
    assert_events_are_the_truth,
    create_landing_table,
    produce_json,
    pyiceberg_catalog,
    sink_worker,
    start_landing_sink,
    wait_for_rows,
)
from backfill_platform_tests.support.session import START

D2 = START + timedelta(days=1)
TOPIC, TABLE, CATALOG = "playback", "raw_landing.playback", "landing"
CUTOFF = datetime(D2.year, D2.month, D2.day, 12, tzinfo=UTC)  # produced after the first commits: late
MALFORMED = '{"event_id": "broken", "event_time": '


def millis(at: datetime) -> int:
    return int(at.timestamp() * 1000)


@pytest.fixture(scope="module")
def landed(moto, rest_catalog, kafka, tmp_path_factory):
    """The topic produced in two batches and landed by the sink; the truth of what it holds."""
    catalog = pyiceberg_catalog(rest_catalog.uri, rest_catalog.warehouse, moto)
    create_topic(kafka.bootstrap, TOPIC, partitions=4)
    create_landing_table(catalog, TABLE)
    truth, early, late, produced = KafkaConnectTruth(), [], [], []
    for partition, records in arrivals(START, 2, 300).items():
        for offset, (ingested, record) in enumerate(records):
            truth.add(record, partition, offset, D2 + timedelta(days=1))
            produced.append((partition, offset, ingested))
            batch = early if ingested < CUTOFF else late
            batch.append(JsonRecord({"payload": record}, key=record["event_id"], partition=partition,
                                    timestamp_ms=millis(ingested)))  # fmt: skip
    noon = datetime(START.year, START.month, START.day, 12, 30, tzinfo=UTC)
    early.append(JsonRecord({"payload": MALFORMED}, key="broken", partition=3, timestamp_ms=millis(noon)))
    produce_json(kafka.bootstrap, TOPIC, early)
    with sink_worker(tmp_path_factory.mktemp("connect"), kafka.bootstrap, moto) as worker:
        start_landing_sink(
            worker, "playback-sink", bootstrap=kafka.bootstrap, topic=TOPIC, table=TABLE,
            catalog_uri=rest_catalog.uri, warehouse=rest_catalog.warehouse, moto=moto,
        )  # fmt: skip
        first = wait_for_rows(catalog, TABLE, len(early), timeout=120, worker=worker)
        produce_json(kafka.bootstrap, TOPIC, late)
        snapshots = wait_for_rows(catalog, TABLE, len(early) + len(late), timeout=120, worker=worker)
    assert len(snapshots) > len(first) and {s.operation for s in snapshots} == {"append"}
    return catalog, truth, produced


@pytest.fixture
def landing_catalog(moto, rest_catalog, spark, monkeypatch):
    """The platform's view of the team's catalog: its variables, and S3 credentials in the driver JVM's
    default chain (system properties: the session's JVM started before moto did)."""
    for setting, value in (("URI", rest_catalog.uri), ("WAREHOUSE", rest_catalog.warehouse),
                           ("S3_ENDPOINT", moto.endpoint_url)):  # fmt: skip
        monkeypatch.setenv(ARCHIVE_CATALOG_ENV.format(name=CATALOG.upper(), setting=setting), value)
    for name, value in moto.env().items():
        monkeypatch.setenv(name, value)
    system = spark.sparkContext._jvm.java.lang.System
    system.setProperty("aws.accessKeyId", "testing")
    system.setProperty("aws.secretAccessKey", "testing")
    system.setProperty("aws.region", moto.region)
    yield
    for name in ("aws.accessKeyId", "aws.secretAccessKey", "aws.region"):
        system.clearProperty(name)


def sink_spec(name: str, **kafka_metadata) -> StreamSpec:
    raw = demo_spec_data("playback")
    raw["name"] = name
    raw["archive"] = {"iceberg_table": TABLE, "catalog": CATALOG, "payload_column": "payload",
                      "kafka_metadata": {"topic": TOPIC, **kafka_metadata}}  # fmt: skip
    return StreamSpec.model_validate(raw)


def test_events_from_the_sinks_table_are_exactly_the_topic(spark, spark_resource, landed, landing_catalog):
    catalog, truth, _produced = landed
    spec = sink_spec("playback_sink")
    result = run(spark_resource, [build_events_asset(spec)], START, D2)
    assert result.success
    settled = settled_by_day(result)
    assert [settled[d.isoformat()].passed for d in (START, D2)] == [True, True]
    assert settled[START.isoformat()].metadata["proof"].value == "Kafka offsets of the table's rows"

    assert_events_are_the_truth(spark, spec, truth)
    # The schema change: version 2's fields were read from the sink's JSON text.
    assert spark.table(events_table(spark, spec)).where(F.col("_schema_version") == 2).count() > 0

    snapshot = catalog.load_table(TABLE).current_snapshot().snapshot_id
    quarantined = spark.table(quarantine_table(spark, spec)).collect()
    assert [(q["reason"], q["_source_file"].split(":")[0], q["line"]) for q in quarantined] == [
        ("malformed_json", f"{TABLE}@{snapshot}", MALFORMED)
    ]


def test_rows_lost_at_a_windows_edge_are_named_from_the_live_topic(
    spark, spark_resource, landed, landing_catalog, kafka, monkeypatch
):
    """The last hour of the first day's read window loses partition 2's rows in the landing table: inside
    that window nothing is missing between rows, but the topic says where the window ends."""
    catalog, _truth, produced = landed
    monkeypatch.setenv(settings.KAFKA_BOOTSTRAP_ENV, kafka.bootstrap)
    spec = sink_spec("playback_edges", edges_from_topic=True)
    end = ReadWindow.of(spec, *day_bounds(START)).high
    lost = sorted(o for p, o, at in produced if p == 2 and end - timedelta(hours=1) <= at < end)
    assert lost == list(range(lost[0], lost[-1] + 1))
    catalog.load_table(TABLE).delete(
        And(EqualTo("_kafka_metadata_partition", 2), GreaterThanOrEqual("_kafka_metadata_offset", lost[0]),
            LessThanOrEqual("_kafka_metadata_offset", lost[-1]))
    )  # fmt: skip
    result = run(spark_resource, [build_events_asset(spec)], START, START)
    settled = settled_by_day(result)
    assert not settled[START.isoformat()].passed
    assert settled[START.isoformat()].metadata["problem"].value == (
        f"Kafka partition 2: offsets {lost[0]}-{lost[-1]} missing from table {TABLE} "
        f"(the topic's last of the window: {lost[-1]})"
    )
    assert settled[START.isoformat()].metadata["proof"].value == (
        f"Kafka offsets of the table's rows and at the window's edges (topic {TOPIC!r})"
    )
