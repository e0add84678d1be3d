"""Archives that are Iceberg tables (`archive.iceberg_table`): a landing table in the shape Iceberg's
Kafka Connect sink writes (`devtools/generator/iceberg_landing.py`), read like a folder archive.

The topic is the one the Kafka Connect S3 archive of `test_kafka_connect.py` comes from (a schema change,
producer retries, late arrivals over three partitions); the truth records each kept event's partition,
offset and day. Expectations come from that truth and the rows appended, never from the platform.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from dagster import AssetKey, DagsterInstance, evaluate_automation_conditions, materialize
from dagster._core.definitions.observe import observe
from pyspark.sql import functions as F

from backfill_platform import settings
from backfill_platform.components.registry import demo_spec_data, project_definitions
from backfill_platform.devtools.generator.iceberg_landing import (
    append_commits,
    create_landing_table,
    sink_row,
    sink_rows,
)
from backfill_platform.lakehouse.resources import open_catalog
from backfill_platform.operations.plan import build_plan
from backfill_platform.pipeline.archive.iceberg_table import table_archive
from backfill_platform.pipeline.archive.listing import list_files
from backfill_platform.pipeline.events.assets import build_events_asset
from backfill_platform.pipeline.events.read_record import day_read_versions
from backfill_platform.pipeline.hour_mapping import ReadPlan, ReadWindow
from backfill_platform.pipeline.names import quarantine_table
from backfill_platform.specs.durations import DAY, day_bounds, midnight
from backfill_platform.specs.stream import StreamSpec
from backfill_platform_tests.support.cli import table_row
from backfill_platform_tests.support.datasets import lake_table, run, settled_by_day
from backfill_platform_tests.support.kafka_connect import assert_events_are_the_truth
from backfill_platform_tests.support.projects import load_project, write_project
from backfill_platform_tests.support.session import START, range_tags

D2 = START + timedelta(days=1)
NOON = datetime(START.year, START.month, START.day, 12, 30, tzinfo=UTC)


def table_spec_data(name: str, table: str, **archive) -> dict:
    """The demo's playback stream, renamed, archived in an Iceberg table of Kafka Connect's rows."""
    raw = demo_spec_data("playback")
    raw["name"] = name
    raw["archive"] = {"iceberg_table": table, "payload_column": "payload",
                      "kafka_metadata": {"topic": "playback"}, **archive}  # fmt: skip
    return raw


def table_spec(name: str, table: str, **archive) -> StreamSpec:
    return StreamSpec.model_validate(table_spec_data(name, table, **archive))


@pytest.fixture(scope="module")
def landing():
    """The landing table: the topic's rows appended hour by hour, plus one malformed payload (a fourth
    partition's only record, at noon of the first day)."""
    catalog = open_catalog()
    table = create_landing_table(catalog, "raw_landing.kc_table")
    rows, truth = sink_rows(START, 2, 300)
    rows.append(sink_row("playback", 3, 0, NOON, '{"event_id": "broken", "event_time": '))
    append_commits(table, rows)
    return catalog, table, rows, truth


def test_a_table_archive_gives_exactly_the_truth_and_names_a_malformed_row(spark, spark_resource, landing):
    _catalog, table, _rows, truth = landing
    spec = table_spec("kc_table", "raw_landing.kc_table")
    snapshot = table.refresh().current_snapshot().snapshot_id
    result = run(spark_resource, [build_events_asset(spec)], START, D2)
    assert result.success
    settled = settled_by_day(result)
    assert all(c.passed for c in settled.values()) and len(settled) == 2
    assert settled[START.isoformat()].metadata["proof"].value == "Kafka offsets of the table's rows"

    assert_events_are_the_truth(spark, spec, truth)

    quarantined = spark.table(quarantine_table(spark, spec)).collect()
    assert [(q["reason"], q["_source_file"].split(":")[0]) for q in quarantined] == [
        ("malformed_json", f"raw_landing.kc_table@{snapshot}")
    ]
    # The row is named by its data file and position: read back, it is the broken payload.
    bad = quarantined[0]
    file_name = bad["_source_file"].split(":", 1)[1]
    located = (
        spark.read.format("iceberg").option("snapshot-id", str(snapshot)).load(lake_table("raw_landing", "kc_table"))
        .select("payload", "_file", "_pos")
        .where(F.col("_file").endswith(file_name) & (F.col("_pos") == bad["_line_number"] - 1))
        .collect()
    )  # fmt: skip
    assert [r["payload"] for r in located] == ['{"event_id": "broken", "event_time": ']


def test_plan_counts_rows_per_day_from_metadata(landing):
    _catalog, _table, rows, _truth = landing
    spec = table_spec("kc_table", "raw_landing.kc_table")
    plan = build_plan(spec, [], START, D2 + timedelta(days=1))
    for day_plan in plan.partitions:
        read = ReadWindow.of(spec, *day_bounds(day_plan.key))
        low, high = read.low, read.high
        low = low.replace(minute=0)
        expected = sum(1 for r in rows if low <= r["_kafka_metadata_timestamp"] < high)
        assert day_plan.lines == expected and day_plan.offset_gaps == []
    assert plan.lines == len(rows)


def test_late_appends_change_exactly_their_days_and_a_compaction_nothing(spark, landing):
    catalog, table, _rows, _truth = landing
    spec = table_spec("kc_table", "raw_landing.kc_table")
    days = [START.isoformat(), D2.isoformat()]
    plan = ReadPlan.for_partitions(spec, days)
    first, end = plan.window.low, plan.window.high

    def versions() -> dict[str, str]:
        return day_read_versions(plan, list_files(table_archive(spec.archive, catalog), first, end), days)

    before = versions()
    # A compaction rewrites every data file into new ones (a `replace` snapshot): no day changes.
    spark.sql(
        "CALL lake.system.rewrite_data_files(table => 'raw_landing.kc_table', options => map('rewrite-all', 'true'))"
    )
    table.refresh()
    assert table.current_snapshot().summary.operation.value == "replace"
    assert versions() == before

    # A late batch: records of the second day's evening arriving late, on a partition of their own.
    late_at = datetime(D2.year, D2.month, D2.day, 20, 10, tzinfo=UTC)
    append_commits(table, [sink_row("playback", 4, 0, late_at, '{"event_id": "late-1"}')])
    after = versions()
    assert after[START.isoformat()] == before[START.isoformat()]
    assert after[D2.isoformat()] != before[D2.isoformat()]


def test_a_delete_in_the_landing_table_is_reported_and_unsettles_the_day(spark, spark_resource, landing):
    catalog, _table, rows, _truth = landing
    spec = table_spec("kc_gap", "raw_landing.kc_table")
    # Partition 1's rows of 13:00 on the first day are deleted from the landing table.
    hour = datetime(START.year, START.month, START.day, 13, tzinfo=UTC)
    lost = sorted(
        r["_kafka_metadata_offset"] for r in rows
        if r["_kafka_metadata_partition"] == 1 and hour <= r["_kafka_metadata_timestamp"] < hour + timedelta(hours=1)
    )  # fmt: skip
    assert lost
    spark.sql(
        "DELETE FROM lake.raw_landing.kc_table WHERE _kafka_metadata_partition = 1 AND "
        f"_kafka_metadata_timestamp >= TIMESTAMP '{hour:%Y-%m-%d %H}:00:00' AND "
        f"_kafka_metadata_timestamp < TIMESTAMP '{hour:%Y-%m-%d %H}:59:59.999999'"
    )
    archive = table_archive(spec.archive, catalog)
    list_files(archive, hour - timedelta(hours=1), hour + timedelta(hours=2))
    assert [r.rows_removed - r.rows_added for r in archive.removals] == [len(lost)]
    assert "raw_landing.kc_table snapshot" in archive.removals[0].describe("raw_landing.kc_table")

    result = run(spark_resource, [build_events_asset(spec)], START, D2)
    settled = settled_by_day(result)
    assert not settled[START.isoformat()].passed and settled[D2.isoformat()].passed
    span = f"offset {lost[0]}" if len(lost) == 1 else f"offsets {lost[0]}-{lost[-1]}"
    assert f"Kafka partition 1: {span} missing from table raw_landing.kc_table" in (
        settled[START.isoformat()].metadata["problem"].value
    )


def test_the_daily_refresh_re_derives_exactly_the_days_a_late_append_touches(
    spark, spark_resource, monkeypatch, tmp_path
):
    """The real observation of the table and the real events run, on one instance; the daily refresh's
    conditions evaluated as the sensor does: nothing after a compaction, exactly the touched day after a
    late append."""
    name, landing_table = "kc_refresh", "raw_landing.kc_refresh"
    table = create_landing_table(open_catalog(), landing_table)
    rows, _truth = sink_rows(START, 2, 120, seed=11)
    append_commits(table, rows)
    project = write_project(tmp_path, [table_spec_data(name, landing_table)])
    spec, definitions = load_project(project).streams[name], project_definitions(project)
    archive_key, events_key = AssetKey(["archive", f"{name}_archive"]), AssetKey(["raw", f"{name}_events"])
    now = midnight(D2.isoformat()) + DAY + spec.allowed_lateness + timedelta(hours=1, minutes=10)
    monkeypatch.setattr(settings, "now", lambda: now)
    instance = DagsterInstance.ephemeral()
    cursor = None

    def requested_days(at: datetime) -> set[str]:
        nonlocal cursor
        observe([definitions.resolve_assets_def(archive_key)], instance=instance)
        result = evaluate_automation_conditions(
            defs=definitions, instance=instance, cursor=cursor, evaluation_time=at
        )
        cursor = result.cursor
        return (
            set(result.get_requested_partitions(events_key))
            if result.get_num_requested(events_key)
            else set()
        )

    observe([definitions.resolve_assets_def(archive_key)], instance=instance)
    events = materialize(
        [definitions.resolve_assets_def(events_key)],  # with the definitions' Spark resource
        tags=range_tags(START, D2),
        instance=instance,
    )
    assert events.success
    assert requested_days(now) == set()

    spark.sql(
        f"CALL lake.system.rewrite_data_files(table => '{landing_table}', options => map('rewrite-all', 'true'))"
    )
    assert table.refresh().current_snapshot().summary.operation.value == "replace"
    assert requested_days(now + timedelta(minutes=1)) == set()

    late_at = datetime(D2.year, D2.month, D2.day, 20, 10, tzinfo=UTC)
    append_commits(
        table,
        [
            sink_row(
                "playback",
                0,
                sum(r["_kafka_metadata_partition"] == 0 for r in rows),
                late_at,
                '{"event_id": "late-1"}',
            )
        ],
    )
    assert requested_days(now + timedelta(minutes=2)) == {D2.isoformat()}


def test_a_merge_on_read_delete_is_reported_not_read_as_new_data(spark):
    """Rows deleted through delete files (`write.delete.mode=merge-on-read`): the listing still works,
    reports the deleted rows, and changes no day's version."""
    catalog, identifier = open_catalog(), "raw_landing.kc_mor"
    table = create_landing_table(catalog, identifier)
    rows, _truth = sink_rows(START, 1, 60, seed=5)
    append_commits(table, rows)
    spark.sql(f"ALTER TABLE lake.{identifier} SET TBLPROPERTIES ('write.delete.mode'='merge-on-read')")
    spec = table_spec("kc_mor", identifier)
    plan = ReadPlan.for_partitions(spec, [START])
    first, end = plan.window.low, plan.window.high
    archive = table_archive(spec.archive, catalog)
    before = day_read_versions(plan, list_files(archive, first, end), [START.isoformat()])
    spark.sql(
        f"DELETE FROM lake.{identifier} WHERE _kafka_metadata_partition = 0 AND _kafka_metadata_offset < 3"
    )
    after = day_read_versions(plan, list_files(archive, first, end), [START.isoformat()])
    assert after == before
    assert [(r.rows_removed, r.hours) for r in archive.removals] == [(3, [])]
    assert "through delete files" in archive.removals[0].describe(identifier)


def test_plan_never_shows_unread_offsets_of_a_table_as_none():
    """15 offsets of Kafka partition 1 deleted from a landing table (issue 61): plan reads no rows, so its
    offsets column says they were not read, never `none`, and its summary says the run proves them."""
    from pyiceberg.expressions import And, EqualTo, GreaterThanOrEqual, LessThanOrEqual
    from rich.console import Console

    from backfill_platform.operations.plan import plan_summary, plan_table

    catalog = open_catalog()
    table = create_landing_table(catalog, "raw_landing.kc_plan_gap")
    rows, _truth = sink_rows(START, 1, 120)
    append_commits(table, rows)
    held = sorted(r["_kafka_metadata_offset"] for r in rows if r["_kafka_metadata_partition"] == 1)
    assert held[-1] >= 30  # offsets 10-24 lie inside partition 1
    table.delete(
        And(
            EqualTo("_kafka_metadata_partition", 1),
            And(
                GreaterThanOrEqual("_kafka_metadata_offset", 10),
                LessThanOrEqual("_kafka_metadata_offset", 24),
            ),
        )
    )
    spec = table_spec("kc_plan_gap", "raw_landing.kc_plan_gap")
    plan = build_plan(spec, [], START, D2)
    assert plan.lines == len(rows) - 15  # only the row count tells the delete apart
    console = Console(record=True, width=300)
    console.print(plan_table(plan))
    for line in plan_summary(plan):
        console.print(line)
    output = console.export_text()
    print(output)  # shown when the test fails
    cells = table_row(output, START.isoformat())
    assert cells[-1] == "not read (proven in the run)" and "none" not in cells
    summary = " ".join(output.split())
    assert "Kafka offsets of table raw_landing.kc_plan_gap: not read by plan for 1 day(s)" in summary
    assert "checked when ingested" not in summary and "completeness proven by" not in summary
