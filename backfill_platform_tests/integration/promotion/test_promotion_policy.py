"""Promotion policy: a range is all or nothing by default; per day, the days that pass are promoted in one
commit and the failing ones are held back with their reason, and reverting restores exactly those days."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pyspark.sql import functions as F

from backfill_platform.devtools.demo.legacy_table import write_legacy_table
from backfill_platform.lakehouse.snapshots import current_snapshot_id
from backfill_platform.lakehouse.tables import replace_range, replace_ranges, snapshot_summary, table_exists
from backfill_platform.pipeline.ledger.commits import (
    DAYS,
    HELD_BACK,
    PROVISIONAL_DAYS,
    VALIDATION_RUNS,
    validation_runs,
)
from backfill_platform.pipeline.ledger.ledger import ledger
from backfill_platform.pipeline.names import production_table, shadow_table
from backfill_platform.pipeline.promotion.adopt import adopt
from backfill_platform.pipeline.promotion.gate import PromotionRefused
from backfill_platform.pipeline.promotion.promote import promote
from backfill_platform.pipeline.promotion.revert import revert_promotion
from backfill_platform.pipeline.shadow.assets import build_shadow_asset
from backfill_platform.pipeline.tables.dataset_tables import read_range
from backfill_platform.pipeline.validation.fingerprints import Fingerprint, dataset_table_fingerprints
from backfill_platform_tests.support.datasets import dataset, failed_checks, run
from backfill_platform_tests.support.session import D1, D2, D3
from backfill_platform_tests.transforms import FLAKY_DAY

END = D3 + timedelta(days=1)
DAYS_1_3 = [D1, D2, D3]
assert D2.isoformat() == FLAKY_DAY


@pytest.fixture(scope="module")
def ready(events_materialized):
    return events_materialized


def flaky(name: str):
    """A dataset whose active version drops rows of FLAKY_DAY (D2) only."""
    return dataset(name, active="flaky", extra_versions={"flaky": "dropped_rows_on_one_day"})


def adopted_legacy(spark, spec, playback) -> int:
    """Production starts as the legacy v1 output for D1..D3, so every promoted day visibly changes."""
    legacy = write_legacy_table(spark, spec, playback, "v1", D1, END)
    return adopt(spark, spec, legacy, D1, END, reason="legacy history")


def fingerprints(spark, spec, snapshot: int | None = None) -> dict[str, Fingerprint]:
    table = production_table(spark, spec)
    return dataset_table_fingerprints(read_range(spark, table, spec, D1, END, snapshot), spec, DAYS_1_3)


def summary_of(spark, spec, promotion) -> dict[str, str]:
    return snapshot_summary(spark, production_table(spark, spec), promotion.snapshot_id)


def shadow_fingerprints(spark, spec) -> dict[str, Fingerprint]:
    shadow = read_range(spark, shadow_table(spark, spec, spec.active_version), spec, D1, END)
    return dataset_table_fingerprints(shadow, spec, DAYS_1_3)


def test_one_failing_day_refuses_the_range_or_is_held_back_per_day(ready, spark, spark_resource, playback):
    spec = flaky("views_policy")
    adopted = adopted_legacy(spark, spec, playback)
    legacy = fingerprints(spark, spec)
    shadow_run = run(spark_resource, [build_shadow_asset(spec, [playback], "flaky")], D1, D3)
    assert not shadow_run.success and "row_counts_per_bucket" in failed_checks(shadow_run)

    # All or nothing (the default): one failing day refuses the range; production is untouched.
    with pytest.raises(PromotionRefused, match=rf"{FLAKY_DAY}: blocking checks failed") as refused:
        promote(spark, spec, [playback], D1, END, {"dagster.run-id": "all-or-nothing"})
    assert D1.isoformat() not in str(refused.value) and "Production is unchanged" in str(refused.value)
    table = production_table(spark, spec)
    assert current_snapshot_id(spark, table) == adopted and fingerprints(spark, spec) == legacy

    # Per day: D1 and D3 in one commit on top of the adopted state; D2 keeps its legacy rows.
    promotion = promote(spark, spec, [playback], D1, END, {"dagster.run-id": "per-day"}, per_day=True)
    d1, d2, d3 = (d.isoformat() for d in DAYS_1_3)
    assert promotion.partitions == [d1, d3] and list(promotion.held_back) == [d2]
    assert "row_counts_per_bucket" in promotion.held_back[d2]
    assert promotion.verified and promotion.partition_verified(d1) and not promotion.partition_verified(d2)
    assert summary_of(spark, spec, promotion)[PROVISIONAL_DAYS] == ",".join(promotion.provisional_partitions)
    shadow = shadow_fingerprints(spark, spec)
    assert promotion.rows_by_partition == {d1: shadow[d1].rows, d3: shadow[d3].rows}
    assert promotion.rows == shadow[d1].rows + shadow[d3].rows
    assert current_snapshot_id(spark, table) == promotion.snapshot_id
    summary = snapshot_summary(spark, table, promotion.snapshot_id)
    assert int(summary["parent-id"]) == adopted  # one commit
    assert summary[DAYS] == f"{d1},{d3}" and summary[HELD_BACK] == d2
    now = fingerprints(spark, spec)
    assert now[d1] == shadow[d1] != legacy[d1] and now[d3] == shadow[d3] != legacy[d3]
    assert now[d2] == legacy[d2]

    # The snapshot names the validations it published; the ledger says the same, and only for them.
    runs = validation_runs(summary)
    assert sorted(runs) == [d1, d3] and set(runs.values()) == {shadow_run.run_id}
    assert VALIDATION_RUNS in summary
    rows = {
        r["partition_date"].isoformat(): r
        for r in ledger(spark, spec.name).where(F.col("version") == "flaky").collect()
    }
    assert rows[d1]["promoted_snapshot_id"] == rows[d3]["promoted_snapshot_id"] == promotion.snapshot_id
    assert rows[d1]["promotion_run_id"] == "per-day" and rows[d2]["promoted_snapshot_id"] is None

    # Revert restores exactly the promoted days, in one commit, and the ledger records it.
    reverted = revert_promotion(spark, spec, promotion.snapshot_id, reason="per-day revert")
    assert reverted.partitions == [d1, d3] and reverted.rows_by_partition == {
        d1: legacy[d1].rows,
        d3: legacy[d3].rows,
    }
    assert fingerprints(spark, spec) == legacy
    revert_summary = snapshot_summary(spark, table, reverted.snapshot_id)
    assert revert_summary[DAYS] == f"{d1},{d3}"
    assert int(revert_summary["parent-id"]) == promotion.snapshot_id
    after = {
        r["partition_date"].isoformat(): r
        for r in ledger(spark, spec.name).where(F.col("version") == "flaky").collect()
    }
    assert after[d1]["reverted_snapshot_id"] == after[d3]["reverted_snapshot_id"] == reverted.snapshot_id
    assert after[d2]["reverted_snapshot_id"] is None


def test_per_day_refuses_when_no_day_passes_naming_every_day(ready, spark, spark_resource, playback):
    spec = flaky("views_policy_none")
    assert not run(spark_resource, [build_shadow_asset(spec, [playback], "flaky")], D2, D2).success
    never = D3  # no validation at all
    with pytest.raises(PromotionRefused) as refused:
        promote(spark, spec, [playback], D2, never + timedelta(days=1), per_day=True)
    message = str(refused.value)
    assert f"{D2.isoformat()}: blocking checks failed" in message
    assert f"{never.isoformat()}: the checks of shadow flaky never ran" in message
    assert not table_exists(spark, production_table(spark, spec))  # never created, let alone written


def test_per_day_with_every_day_passing_replaces_the_range(ready, spark, spark_resource, playback):
    spec = dataset("views_policy_all")
    assert run(spark_resource, [build_shadow_asset(spec, [playback], "v2")], D1, D2).success
    promotion = promote(spark, spec, [playback], D1, D3, per_day=True)
    assert promotion.partitions == [D1.isoformat(), D2.isoformat()] and promotion.held_back == {}
    summary = snapshot_summary(spark, production_table(spark, spec), promotion.snapshot_id)
    assert summary[DAYS] == f"{D1.isoformat()},{D2.isoformat()}" and summary[HELD_BACK] == ""


def test_replace_ranges_refuses_rows_of_other_days(ready, spark, spark_resource, playback):
    spec = dataset("views_policy_days")
    assert run(spark_resource, [build_shadow_asset(spec, [playback], "v2")], D1, D3).success
    source = read_range(spark, shadow_table(spark, spec, "v2"), spec, D1, END)
    target = shadow_table(spark, spec, "v2")
    before = current_snapshot_id(spark, target)
    days_1_3 = [(D1, D1 + timedelta(days=1)), (D3, D3 + timedelta(days=1))]
    with pytest.raises(ValueError, match="rows outside the ranges"):
        replace_ranges(source, target, spec.partition_column, days_1_3, 2)
    with pytest.raises(ValueError, match="no partitions"):
        replace_ranges(source.limit(0), target, spec.partition_column, [], 0)
    with pytest.raises(ValueError, match=rf"refusing to write {target}: rows outside \[{D1}, {D2}\)"):
        replace_range(source, target, spec.partition_column, D1, D2)
    assert current_snapshot_id(spark, target) == before

    # Non-contiguous days: D1 and D3 emptied in one commit, D2 untouched.
    kept = dataset_table_fingerprints(source, spec, [D2])
    replace_ranges(source.limit(0), target, spec.partition_column, days_1_3, 2, {"test": "days"})
    counts = {
        r[0]: r[1]
        for r in read_range(spark, target, spec, D1, END).groupBy(spec.partition_column).count().collect()
    }
    assert counts == {D2: kept[D2.isoformat()].rows}
