"""The core guarantee: validated before visible, atomic, reversible, with a ledger that proves it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from dagster import materialize
from pyspark.sql import functions as F

from backfill_platform.devtools.demo.legacy_table import write_legacy_table
from backfill_platform.lakehouse.snapshots import current_snapshot_id
from backfill_platform.lakehouse.tables import replace_range, snapshot_summary, table_exists
from backfill_platform.pipeline.ledger.ledger import ledger
from backfill_platform.pipeline.names import production_table, shadow_table
from backfill_platform.pipeline.promotion.adopt import AdoptRefused, adopt
from backfill_platform.pipeline.promotion.assets import build_production_asset
from backfill_platform.pipeline.promotion.gate import PromotionRefused
from backfill_platform.pipeline.promotion.promote import fence_options, promote
from backfill_platform.pipeline.promotion.revert import RevertRefused, revert_promotion
from backfill_platform.pipeline.run_settings import MAX_DIVERGENCE_TAG
from backfill_platform.pipeline.shadow.assets import build_shadow_asset
from backfill_platform.pipeline.tables.dataset_tables import read_range
from backfill_platform.pipeline.validation.fingerprints import dataset_table_fingerprints
from backfill_platform_tests.support.datasets import (
    dataset,
    failed_checks,
    prod_state,
    promotion_chain,
    renamed_dataset_data,
    run,
)
from backfill_platform_tests.support.lakehouse import lakehouse_session
from backfill_platform_tests.support.projects import load_project, write_project
from backfill_platform_tests.support.session import D1, D2, D3, START, range_tags
from backfill_platform_tests.support.streams import stream_copy
from backfill_platform_tests.transforms import EXCLUDED_DAY


@pytest.fixture(scope="module")
def ready(events_materialized):
    """Events of the generated range exist (and their ingestion figures are in the ledger)."""
    return events_materialized


@pytest.mark.both_spark_lines
def test_v1_bug_is_caught_per_bucket_and_v2_passes(ready, spark, spark_resource, playback):
    spec = dataset("views_bug")
    v1 = run(spark_resource, [build_shadow_asset(spec, [playback], "v1")], D1, D2)
    assert not v1.success
    assert {"row_counts_per_bucket", "checksums_per_bucket"} <= failed_checks(v1)
    v2 = run(spark_resource, [build_shadow_asset(spec, [playback], "v2")], D1, D2)
    assert v2.success and failed_checks(v2) <= {"divergence_vs_production"}  # production is empty: warning
    rows = {
        (r["version"], r["partition_date"].isoformat()): r
        for r in ledger(spark, "views_bug")
        .select("version", "partition_date", "checks_passed", "events_written")
        .collect()
    }
    assert not rows[("v1", D1.isoformat())]["checks_passed"] and rows[("v2", D1.isoformat())]["checks_passed"]
    # Daily totals agree: the bug only shows per hour bucket, which is what the checks compare.
    s1 = spark.table(shadow_table(spark, spec, "v1")).agg(F.sum("views")).first()[0]
    s2 = spark.table(shadow_table(spark, spec, "v2")).agg(F.sum("views")).first()[0]
    assert s1 == s2 > 0
    assert rows[("v2", D1.isoformat())]["events_written"] > 0


@pytest.mark.both_spark_lines
@pytest.mark.parametrize(
    ("function", "failing"),
    [
        ("dropped_rows", "row_counts_per_bucket"),
        ("doubled_rows", "row_counts_per_bucket"),
        ("altered_aggregate", "checksums_per_bucket"),
    ],
)
def test_a_bad_shadow_never_reaches_production(ready, spark, spark_resource, playback, function, failing):
    name = f"views_gate_{function}"  # each case its own shadow and production
    good = dataset(name)
    assert run(
        spark_resource,
        promotion_chain(good, playback),
        D1,
        D2,
    ).success
    before = prod_state(spark, good)

    bad = dataset(name, active="bad", extra_versions={"bad": function})
    result = run(
        spark_resource,
        promotion_chain(bad, playback),
        D1,
        D2,
    )
    assert not result.success and failing in failed_checks(result)
    assert prod_state(spark, good) == before

    # Materializing production alone later is refused too, and still changes nothing.
    alone = run(spark_resource, [build_production_asset(bad, [playback])], D1, D2)
    assert not alone.success
    assert prod_state(spark, good) == before
    with pytest.raises(PromotionRefused, match="blocking checks failed"):
        promote(spark, bad, [playback], D1, D2 + timedelta(days=1))


def test_promotion_refuses_when_checks_never_ran(ready, spark, playback):
    spec = dataset("views_never", active="v1")
    with pytest.raises(PromotionRefused, match="never materialized"):
        promote(spark, spec, [playback], D1, D2)


def test_promotion_refuses_a_shadow_changed_after_validation(ready, spark, spark_resource, playback):
    spec = dataset("views_changed")
    assert run(spark_resource, [build_shadow_asset(spec, [playback], "v2")], D1, D1).success
    spark.sql(f"DELETE FROM {shadow_table(spark, spec, 'v2')} WHERE event_hour = 3")
    with pytest.raises(PromotionRefused, match="changed after its validation"):
        promote(spark, spec, [playback], D1, D2)


@pytest.mark.both_spark_lines
def test_promotion_is_one_snapshot_over_adopted_history(ready, spark, spark_resource, playback):
    spec = dataset("views_atomic")
    legacy = write_legacy_table(spark, spec, playback, "v1", D1, D3 + timedelta(days=1))
    adopted = adopt(spark, spec, legacy, D1, D3 + timedelta(days=1), reason="old pipeline output")
    assert (
        snapshot_summary(spark, production_table(spark, spec), adopted)["backfill_platform.action"] == "adopt"
    )
    with pytest.raises(AdoptRefused, match="never overwrites"):
        adopt(spark, spec, legacy, D3, D3 + timedelta(days=1), reason="again")

    result = run(
        spark_resource,
        promotion_chain(spec, playback),
        D1,
        D3,
        **{"backfill_platform/reason": "fix late-event hours", "backfill_platform/ticket": "DATA-42"},
    )
    assert result.success
    table = production_table(spark, spec)
    promoted = current_snapshot_id(spark, table)
    summary = snapshot_summary(spark, table, promoted)
    assert int(summary["parent-id"]) == adopted  # exactly one commit on top of the adopted state
    assert (
        summary["backfill_platform.action"] == "promote"
        and summary["backfill_platform.dataset-version"] == "v2"
    )
    assert summary["reason"] == "fix late-event hours" and summary["ticket"] == "DATA-42"
    assert summary["dagster.run-id"] == result.run_id and summary["backfill_platform.check-digest"]

    days = [D1, D2, D3]
    shadow = dataset_table_fingerprints(
        read_range(spark, shadow_table(spark, spec, "v2"), spec, D1, D3 + timedelta(days=1)), spec, days
    )
    legacy_fp = dataset_table_fingerprints(spark.table(legacy), spec, days)
    pinned_before = dataset_table_fingerprints(
        read_range(spark, table, spec, D1, D3 + timedelta(days=1), adopted), spec, days
    )
    pinned_after = dataset_table_fingerprints(
        read_range(spark, table, spec, D1, D3 + timedelta(days=1), promoted), spec, days
    )
    assert pinned_before == legacy_fp and pinned_after == shadow and shadow != legacy_fp
    verified = [c for c in result.get_asset_check_evaluations() if c.check_name == "promotion_verified"]
    assert verified and verified[0].passed

    rows = ledger(spark, spec.name).where(F.col("version") == "v2").collect()
    assert {r["promoted_snapshot_id"] for r in rows} == {promoted}
    adopted_rows = ledger(spark, spec.name).where(F.col("adopted")).collect()
    assert len(adopted_rows) == 3 and all(r["checks_passed"] is None for r in adopted_rows)


@pytest.mark.both_spark_lines
def test_revert_restores_exactly_the_promoted_partitions(ready, spark, spark_resource, playback):
    spec = dataset("views_revert")
    legacy = write_legacy_table(spark, spec, playback, "v1", D1, D3 + timedelta(days=1))
    adopt(spark, spec, legacy, D1, D3 + timedelta(days=1), reason="old pipeline output")
    table = production_table(spark, spec)
    days = [D1, D2, D3]
    before = dataset_table_fingerprints(spark.table(table), spec, days)

    assert run(
        spark_resource,
        promotion_chain(spec, playback),
        D1,
        D2,
    ).success
    first = current_snapshot_id(spark, table)
    # A later, unrelated commit to another partition.
    assert run(
        spark_resource,
        promotion_chain(spec, playback),
        D3,
        D3,
    ).success
    third_day = dataset_table_fingerprints(spark.table(table), spec, days)[D3.isoformat()]

    result = revert_promotion(spark, spec, first, reason="test")
    after = dataset_table_fingerprints(spark.table(table), spec, days)
    assert after[D1.isoformat()] == before[D1.isoformat()] and after[D2.isoformat()] == before[D2.isoformat()]
    assert after[D3.isoformat()] == third_day != before[D3.isoformat()]
    summary = snapshot_summary(spark, table, result.snapshot_id)
    assert summary["backfill_platform.reverts-snapshot-id"] == str(first)
    reverted = ledger(spark, spec.name).where(F.col("promoted_snapshot_id") == first).collect()
    assert reverted and all(r["reverted_snapshot_id"] == result.snapshot_id for r in reverted)
    with pytest.raises(RevertRefused, match="already reverted"):
        revert_promotion(spark, spec, first)


def test_revert_refuses_when_the_partitions_changed_later(ready, spark, spark_resource, playback):
    spec = dataset("views_revert_overlap")
    assets = promotion_chain(spec, playback)
    assert run(spark_resource, assets, D1, D1).success
    first = current_snapshot_id(spark, production_table(spark, spec))
    spark.sql(f"DELETE FROM {production_table(spark, spec)} WHERE event_hour = 1")
    with pytest.raises(RevertRefused, match="changed after promotion"):
        revert_promotion(spark, spec, first)


def test_a_partition_that_becomes_empty_is_emptied_in_production(ready, spark, spark_resource, playback):
    spec = dataset("views_empty")
    assert run(
        spark_resource,
        promotion_chain(spec, playback),
        D1,
        D3,
    ).success
    table = production_table(spark, spec)
    assert spark.table(table).where(F.col("event_date") == EXCLUDED_DAY).count() > 0

    fixed = dataset(
        "views_empty",
        active="v3",
        extra_versions={"v3": "without_excluded_day"},
        expected_rows={"filter": f"to_date(event_time) <> DATE'{EXCLUDED_DAY}' AND event_type IN ('start', 'stop')",
                       "expression": "count(DISTINCT title_id)"},
        reconciliation=[
            {"column": "views", "filter": f"to_date(event_time) <> DATE'{EXCLUDED_DAY}' AND event_type = 'start'",
             "expression": "count(1)"},
        ],
    )  # fmt: skip
    assert run(
        spark_resource,
        promotion_chain(fixed, playback),
        D1,
        D3,
    ).success
    by_day = {r[0].isoformat(): r[1] for r in spark.table(table).groupBy("event_date").count().collect()}
    assert EXCLUDED_DAY not in by_day and by_day[D1.isoformat()] > 0 and by_day[D3.isoformat()] > 0


def test_a_promotion_based_on_a_stale_view_of_production_is_refused(ready, spark, spark_resource, playback):
    """The fence: a commit that read production before another promotion of the same days cannot land."""
    spec = dataset("views_fence")
    assets = promotion_chain(spec, playback)
    assert run(spark_resource, assets, D1, D1).success
    table = production_table(spark, spec)
    seen = current_snapshot_id(spark, table)
    assert run(spark_resource, assets, D1, D1).success  # a concurrent writer promotes the same day
    after = prod_state(spark, spec)
    stale = read_range(spark, shadow_table(spark, spec, "v2"), spec, D1, D2)
    with pytest.raises(Exception, match=r"(?i)conflict|validation|found new"):
        replace_range(
            stale, table, spec.partition_column, D1, D2, {"test": "stale"}, options=fence_options(seen)
        )
    assert prod_state(spark, spec) == after


def test_promotion_refuses_days_whose_checks_never_ran(ready, spark, spark_resource, playback):
    spec = dataset("views_partial")
    assert run(spark_resource, [build_shadow_asset(spec, [playback], "v2")], D1, D1).success
    with pytest.raises(PromotionRefused, match=f"{D2.isoformat()}: the checks of shadow v2 never ran"):
        promote(spark, spec, [playback], D1, D3)
    assert not table_exists(spark, production_table(spark, spec)) or prod_state(spark, spec)[0] is None


def test_a_day_without_validated_events_is_blocked(ready, spark, spark_resource, playback):
    """0 rows expected and 0 found would pass every bucket check: the events verdict must gate it."""
    spec = dataset("views_no_events")
    assets = promotion_chain(spec, playback)
    assert run(spark_resource, assets, D1, D1).success
    before = prod_state(spark, spec)
    never_ingested = START + timedelta(days=20)
    result = run(spark_resource, assets, never_ingested, never_ingested)
    assert not result.success and "events_validated" in failed_checks(result)
    assert prod_state(spark, spec) == before


def test_ledger_tables_gain_columns_added_by_a_newer_version(spark, tmp_path):
    from backfill_platform.pipeline.ledger.ledger import (
        IngestionRow,
        ensure_ledger,
        ingestions_table,
        row_columns,
    )

    # A ledger of the test's own (another catalog): the session's ledger keeps its columns and values.
    lakehouse = lakehouse_session(spark, tmp_path)
    ensure_ledger(lakehouse)
    table = ingestions_table(lakehouse)
    lakehouse.sql(f"ALTER TABLE {table} DROP COLUMN failed_checks")
    assert "failed_checks" not in lakehouse.table(table).columns
    ensure_ledger(lakehouse)
    assert "failed_checks" in lakehouse.table(table).columns
    assert set(lakehouse.table(table).columns) == set(IngestionRow.__dataclass_fields__)
    # Column types come from the row's type hints (`int | None` is a nullable bigint).
    schema = {field.name: field.dataType.simpleString() for field in lakehouse.table(table).schema}
    assert schema == dict(row_columns(IngestionRow))
    assert schema["events_snapshot_id"] == "bigint" and schema["recorded_at"] == "timestamp"
    assert schema["partition_date"] == "date" and schema["run_seconds"] == "double"


def test_a_row_field_without_a_column_type_is_refused():
    from dataclasses import dataclass

    from backfill_platform.pipeline.ledger.ledger import row_columns

    @dataclass
    class Row:
        day: str
        tags: list[str] | None = None

    with pytest.raises(TypeError, match=r"Row.tags: no column type for"):
        row_columns(Row)


def test_divergence_blocks_above_the_ratio_the_backfill_was_launched_with(
    ready, spark, spark_resource, playback
):
    spec = dataset("views_diverge")
    legacy = write_legacy_table(spark, spec, playback, "v1", D1, D2)
    adopt(spark, spec, legacy, D1, D2, reason="old pipeline output")
    before = prod_state(spark, spec)
    strict = run(
        spark_resource,
        promotion_chain(spec, playback),
        D1,
        D1,
        **{"backfill_platform/max_divergence_ratio": "0.01"},
    )
    assert not strict.success and "divergence_vs_production" in failed_checks(strict)
    assert prod_state(spark, spec) == before
    lenient = run(
        spark_resource,
        promotion_chain(spec, playback),
        D1,
        D1,
        **{"backfill_platform/max_divergence_ratio": "0.9"},
    )
    assert lenient.success and prod_state(spark, spec) != before


def test_a_divergence_bound_in_the_shadows_config_blocks_as_the_tag_does_and_a_different_tag_is_refused(
    ready, spark, spark_resource, playback
):
    """The launchpad's way in: the shadow asset's config `max_divergence_ratio`. Given beside a run tag
    with another value, the shadow step is refused naming both, before it writes anything."""
    spec = dataset("views_diverge_config")
    legacy = write_legacy_table(spark, spec, playback, "v1", D1, D2)
    adopt(spark, spec, legacy, D1, D2, reason="old pipeline output")
    before = prod_state(spark, spec)
    assets = promotion_chain(spec, playback)
    shadow_op = assets[0].op.name
    strict = {"ops": {shadow_op: {"config": {"max_divergence_ratio": 0.01}}}}

    def launched(**tags: str):
        return materialize(
            assets,
            resources={"spark": spark_resource},
            run_config=strict,
            tags=range_tags(D1, D1, **tags),
            raise_on_error=False,
        )

    blocked = launched()
    assert not blocked.success and "divergence_vs_production" in failed_checks(blocked)
    assert prod_state(spark, spec) == before
    shadow = shadow_table(spark, spec, spec.active_version)
    shadow_snapshot = current_snapshot_id(spark, shadow)

    refused = launched(**{MAX_DIVERGENCE_TAG: "0.9"})
    (failure,) = [e.step_failure_data.error.to_string() for e in refused.all_events if e.is_step_failure]
    assert (
        f"run tag {MAX_DIVERGENCE_TAG} says 0.9 and the asset's config says 0.01: give one, or the same value "
        "in both"
    ) in failure
    assert current_snapshot_id(spark, shadow) == shadow_snapshot  # refused before the shadow's write
    assert prod_state(spark, spec) == before


def test_a_key_value_with_a_pipe_reads_back_whole_from_the_divergence_sample(
    ready, spark, spark_resource, playback
):
    """Check metadata tables keep a value from the data as it is (a markdown row would split at `|`)."""
    spec = dataset("views_pipe")
    legacy = write_legacy_table(spark, spec, playback, "v2", D1, D2)
    extra = {"event_date": D1, "event_hour": 0, "title_id": "!a|b", "views": 3, "watch_seconds": 40,
             "unique_viewers": 2}  # fmt: skip
    spark.createDataFrame([extra], spark.table(legacy).schema).writeTo(legacy).append()
    adopt(spark, spec, legacy, D1, D2, reason="old pipeline output with one more row")
    result = run(spark_resource, [build_shadow_asset(spec, [playback], "v2")], D1, D1)
    assert result.success  # without a launched bound, divergence is a warning
    (check,) = [c for c in result.get_asset_check_evaluations() if c.check_name == "divergence_vs_production"]
    assert check.metadata["diverging_rows"].value == 1
    sample = check.metadata["sample"]
    assert [column.name for column in sample.schema.columns][:4] == [
        "_kind", "event_date", "event_hour", "title_id"
    ]  # fmt: skip
    (record,) = sample.records
    assert record.data["title_id"] == "!a|b" and record.data["_kind"] == "only_in_production"
    assert record.data["event_date"] == D1.isoformat() and record.data["event_hour"] == 0
    assert record.data["prod_views"] == 3 and record.data["new_views"] is None
    # The CLI prints the same table as markdown, the `|` escaped: a row keeps one cell per column.
    from backfill_platform.pipeline.validation.metadata_tables import table_markdown

    row = table_markdown(sample).splitlines()[2]
    assert "| !a\\|b |" in row and row.replace("\\|", "").count("|") == len(sample.schema.columns) + 1


def test_revert_job_restores_the_last_promotion(
    ready, spark, spark_resource, playback, tmp_path, monkeypatch
):
    from backfill_platform.pipeline.promotion.jobs import revert_promotion_job

    # The job looks the dataset up by name among the project's specs: a component of the test's own.
    name = "views_revert_job"
    specs = load_project(write_project(tmp_path, [renamed_dataset_data(name)], demo=True))
    spec = specs.datasets[name]
    assert run(spark_resource, promotion_chain(spec, playback), D2, D2).success
    table = production_table(spark, spec)
    promoted = current_snapshot_id(spark, table)
    result = revert_promotion_job.execute_in_process(
        run_config={"ops": {"revert_promotion_op": {"config": {"dataset": spec.name, "reason": "job test"}}}},
        resources={"spark": spark_resource, "specs": specs},
    )
    assert result.success
    summary = snapshot_summary(spark, table, current_snapshot_id(spark, table))
    assert summary["backfill_platform.reverts-snapshot-id"] == str(promoted)
    assert summary["reason"] == "job test"


def test_cutover_review_and_retiring_an_old_shadow(ready, spark, spark_resource, playback):
    from backfill_platform.pipeline.promotion.cutover import drop_shadow, history_divergence

    spec = dataset("views_cutover")
    assert run(spark_resource, promotion_chain(spec, playback), D1, D1).success
    assert not run(spark_resource, [build_shadow_asset(spec, [playback], "v1")], D1, D1).success
    v1 = history_divergence(spark, spec, "v1")
    v2 = history_divergence(spark, spec, "v2")
    assert v2.diverging == 0 and v1.partitions[D1.isoformat()].changed > 0
    with pytest.raises(ValueError, match="active version"):
        drop_shadow(spark, spec, "v2")
    dropped = drop_shadow(spark, spec, "v1")
    assert not table_exists(spark, dropped)


def test_a_day_without_archive_records_fails_its_events_checks(truth, data_dir, spark_resource, playback):
    from backfill_platform.pipeline.events.assets import build_events_asset

    stream = stream_copy(playback, data_dir, "playback_no_records")  # its own events tables
    missing = START + timedelta(days=25)  # the archive has nothing for it (lost or expired)
    result = run(spark_resource, [build_events_asset(stream)], missing, missing)
    assert not result.success and "records_present" in failed_checks(result)


def test_events_rewritten_after_their_checks_block_the_shadow(
    truth, data_dir, spark, spark_resource, playback
):
    """A run that rewrote a day's events and died before its checks leaves an older verdict behind."""
    from backfill_platform.pipeline.events.assets import build_events_asset
    from backfill_platform.pipeline.names import events_table

    day = START + timedelta(days=4)
    stream = stream_copy(playback, data_dir, "playback_rewritten")  # events of the test's own
    spec = dataset("views_events_changed", source_stream=stream.name)
    assert run(spark_resource, [build_events_asset(stream)], day, day).success
    spark.sql(f"DELETE FROM {events_table(spark, stream)} WHERE event_id IN "
              f"(SELECT event_id FROM {events_table(spark, stream)} WHERE to_date(event_time) = DATE'{day}' LIMIT 5)")  # fmt: skip
    result = run(spark_resource, [build_shadow_asset(spec, [stream], "v2")], day, day)
    assert not result.success and "events_validated" in failed_checks(result)
    check = next(c for c in result.get_asset_check_evaluations() if c.check_name == "events_validated")
    assert check.partition == day.isoformat()
    assert "changed after their checks" in check.metadata["problem"].value
    # Re-deriving the day (and its verdict) unblocks the shadow.
    assert run(spark_resource, [build_events_asset(stream)], day, day).success
    assert run(spark_resource, [build_shadow_asset(spec, [stream], "v2")], day, day).success
