"""Archive → events on a generated archive: exact truth per day, reconciliation, quarantine, idempotency."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pyspark.sql import functions as F

from backfill_platform.pipeline.archive.stream_archive import archive_for
from backfill_platform.pipeline.events.ingest import ingest_window
from backfill_platform.pipeline.hour_mapping import ReadPlan
from backfill_platform.pipeline.names import events_table, quarantine_table
from backfill_platform.pipeline.validation.fingerprints import checksum
from backfill_platform.specs.durations import DAY, midnight
from backfill_platform_tests.support.session import DAYS, START
from backfill_platform_tests.support.streams import stream_copy

WINDOW = (midnight(START), midnight(START) + DAYS * DAY)


@pytest.fixture(scope="module")
def materialized(events_materialized):
    return events_materialized


def test_range_is_one_run_with_a_materialization_per_partition(materialized):
    events = materialized.get_asset_materialization_events()
    assert {e.event_specific_data.materialization.partition for e in events} == {
        (START + timedelta(days=i)).isoformat() for i in range(DAYS)
    }
    # `materialize` executes exactly one run; all three partitions were materialized inside it.
    assert len(events) == DAYS and materialized.run_id


def test_every_check_has_a_verdict_per_day_with_that_days_numbers(materialized, truth):
    checks = {(e.check_name, e.partition): e for e in materialized.get_asset_check_evaluations()}
    names = {"reconciliation", "quarantine_ratio", "schema", "records_present", "settled"}
    days = [(START + timedelta(days=i)).isoformat() for i in range(DAYS)]
    assert set(checks) == {(name, day) for name in names for day in days}
    assert all(c.passed for c in checks.values())
    # Each day's verdicts judge that day's materialization of this run (else the UI counts them for none).
    targets = {day: {checks[(name, day)].target_materialization_data for name in names} for day in days}
    assert all(len(found) == 1 and None not in found for found in targets.values()), targets
    assert {next(iter(found)).run_id for found in targets.values()} == {materialized.run_id}
    assert len({next(iter(found)).storage_id for found in targets.values()}) == len(days)
    for day in days:
        reconciliation = {k: v.value for k, v in checks[("reconciliation", day)].metadata.items()}
        assert reconciliation["read"] == truth["partitions"][day]["records"], day
        assert reconciliation["unaccounted"] == 0


def test_events_match_generator_truth_per_day(materialized, truth, spark, playback):
    events = spark.table(events_table(spark, playback))
    by_day = {
        r["day"].isoformat(): r
        for r in events.groupBy(F.to_date("event_time").alias("day"))
        .agg(
            F.count(F.lit(1)).alias("n"),
            F.countDistinct("event_id").alias("ids"),
            F.count(F.when(F.col("event_type") == "start", 1)).alias("starts"),
            F.count(F.when(F.col("_ingestion_time") > F.date_trunc("hour", "event_time"), 1)).alias("late"),
        )
        .collect()
    }
    for i in range(DAYS):
        day = (START + timedelta(days=i)).isoformat()
        expected = truth["partitions"][day]
        assert by_day[day]["n"] == expected["written"], day
        assert by_day[day]["ids"] == expected["written"], day  # deduplicated
        assert by_day[day]["starts"] == expected["starts"], day
        assert by_day[day]["late"] == expected["late"], day


def test_each_days_materialization_carries_that_days_figures(materialized, truth):
    materializations = [
        e.event_specific_data.materialization for e in materialized.get_asset_materialization_events()
    ]
    by_partition = {m.partition: {k: v.value for k, v in m.metadata.items()} for m in materializations}
    assert len(by_partition) == DAYS
    for day, figures in by_partition.items():
        expected = truth["partitions"][day]
        assert figures["records"] == expected["records"]
        assert figures["duplicates"] == expected["duplicates"]
        assert figures["conflicting_ids"] == expected["conflicting_ids"]
        for reason, count in expected["quarantined"].items():
            assert figures[f"quarantined_{reason}"] == count, (day, reason)
        assert figures["records"] == figures["written"] + figures["duplicates"] + figures["quarantined"]


def test_quarantine_holds_each_bad_line_once_with_its_reason(materialized, truth, spark, playback):
    quarantine = spark.table(quarantine_table(spark, playback))
    rows = quarantine.groupBy(F.to_date("attributed_time").alias("day"), "reason").count().collect()
    got = {(r["day"].isoformat(), r["reason"]): r["count"] for r in rows}
    for i in range(DAYS):
        day = (START + timedelta(days=i)).isoformat()
        for reason, count in truth["partitions"][day]["quarantined"].items():
            assert got.get((day, reason), 0) == count, (day, reason)
    total = quarantine.count()
    assert quarantine.select("_source_file", "_line_number").distinct().count() == total
    assert quarantine.where(F.col("line").isNull() | F.col("reason").isNull()).count() == 0


def test_rerun_gives_identical_rows_and_checksums(truth, data_dir, spark, playback):
    stream = stream_copy(playback, data_dir, "playback_rerun")  # its own tables: the session's are only read
    ingest_window(spark, stream, archive_for(stream), ReadPlan.for_range(stream, *WINDOW))
    table = events_table(spark, stream)
    before = checksum(spark.table(table))
    quarantine_before = checksum(spark.table(quarantine_table(spark, stream)))
    ingest_window(spark, stream, archive_for(stream), ReadPlan.for_range(stream, *WINDOW))
    assert checksum(spark.table(table)) == before
    assert checksum(spark.table(quarantine_table(spark, stream))) == quarantine_before
    assert before.rows > 0


def test_pyiceberg_reads_what_spark_wrote(materialized, catalog, spark, playback):
    table = catalog.load().load_table(("raw", playback.events_table))
    day = START.isoformat()
    arrow = table.scan(
        row_filter=f"event_time >= '{day}T00:00:00+00:00' and event_time < '{day}T12:00:00+00:00'"
    ).to_arrow()
    expected = (
        spark.table(events_table(spark, playback))
        .where((F.col("event_time") >= f"{day} 00:00:00") & (F.col("event_time") < f"{day} 12:00:00"))
        .count()
    )
    assert arrow.num_rows == expected > 0
    assert set(arrow.column("event_id").to_pylist()) == {
        r[0]
        for r in spark.table(events_table(spark, playback))
        .where((F.col("event_time") >= f"{day} 00:00:00") & (F.col("event_time") < f"{day} 12:00:00"))
        .select("event_id")
        .collect()
    }


def test_a_finer_shuffle_changes_no_row_figure_or_checksum(
    materialized, truth, data_dir, spark, playback, monkeypatch
):
    """A read big enough to spill is classified in more shuffle partitions (`classify_shuffle_partitions`):
    the same window cut in 29 gives the session's rows, checksums and figures, and the session's own
    setting is back after it."""
    from backfill_platform.pipeline.events import ingest

    asked: list[tuple[int, int]] = []

    def finer(configured: int, read_bytes: int) -> int:
        asked.append((configured, read_bytes))
        return 29

    monkeypatch.setattr(ingest, "classify_shuffle_partitions", finer)
    stream = stream_copy(playback, data_dir, "playback_finer")
    archive = archive_for(stream)
    plan = ReadPlan.for_range(stream, *WINDOW)
    result = ingest_window(spark, stream, archive, plan)

    configured = int(spark.conf.get("spark.sql.shuffle.partitions"))
    read = sum(f.size for f in ingest.window_files(archive, plan.window))
    assert asked == [(configured, read)] and read > 0 and configured != 29
    for table in (events_table, quarantine_table):
        assert checksum(spark.table(table(spark, stream))) == checksum(spark.table(table(spark, playback)))
    for i in range(DAYS):
        day = (START + timedelta(days=i)).isoformat()
        assert result.partitions[day].written == truth["partitions"][day]["written"], day
        assert result.partitions[day].duplicates == truth["partitions"][day]["duplicates"], day
