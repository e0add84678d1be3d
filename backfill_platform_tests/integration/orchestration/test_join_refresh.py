"""The daily refresh of a dataset joining two streams: aligned completeness and a lookback across midnight.

`attributed_plays` reads `playback` (its own day) and `impressions` (from 30 minutes before its day).
The conditions are evaluated with `dagster.evaluate_automation_conditions` on the demo project's definitions
(no Spark): runs are simulated by reporting materializations and check verdicts, tick by tick.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from dagster import AssetCheckEvaluation, AssetKey, AssetRecordsFilter

from backfill_platform.components.registry import package_project, project_definitions
from backfill_platform.dagster_internals import AssetCheckEvaluationTargetMaterializationData
from backfill_platform.specs.durations import DAY, HOUR, midnight
from backfill_platform_tests.support.automation import Ticks, day_keys
from backfill_platform_tests.support.datasets import production

PLAYBACK = AssetKey(["raw", "playback_events"])
IMPRESSIONS = AssetKey(["raw", "impressions_events"])
SHADOW = AssetKey(["shadow", "attributed_plays__v2"])
PRODUCTION = production("attributed_plays").key
WATCHED = (PLAYBACK, IMPRESSIONS, SHADOW, PRODUCTION)  # what a tick reports: the join's assets
HISTORY = day_keys("2026-10-01", "2026-10-09")
LATEST = HISTORY[-1]


def settled_refresh(specs, unjudged: dict[AssetKey, str]) -> tuple[Ticks, object]:
    """Every day of HISTORY materialized with passing verdicts (the events days of `unjudged` without: a
    runless verdict cannot be repeated, and the test re-derives those days), evaluated once after they
    all settled."""
    ticks = Ticks(project_definitions(package_project()), WATCHED)
    for key in (PLAYBACK, IMPRESSIONS, SHADOW, PRODUCTION):
        ticks.materialize(key, [d for d in HISTORY if unjudged.get(key) != d])
        if key in unjudged:
            ticks.materialize(key, [unjudged[key]], checks_pass=None)
    lateness = max(s.allowed_lateness for s in specs.streams.values())
    now = midnight(LATEST) + DAY + lateness + HOUR + timedelta(minutes=10)
    ticks.at(now)
    return ticks, now


def test_the_join_reads_the_day_before_only_from_the_source_with_a_lookback(specs):
    graph = project_definitions(package_project()).resolve_asset_graph()
    assert graph.get(SHADOW).parent_keys == {PLAYBACK, IMPRESSIONS}

    def parent_days(parent: AssetKey, day: str) -> set[str]:
        mapping = graph.get_partition_mapping(SHADOW, parent)
        partitions = graph.get(SHADOW).partitions_def
        upstream = mapping.get_upstream_mapped_partitions_result_for_partitions(
            partitions.subset_with_partition_keys([day]), partitions, graph.get(parent).partitions_def
        )
        return set(upstream.partitions_subset.get_partition_keys())

    assert parent_days(IMPRESSIONS, "2026-10-05") == {"2026-10-04", "2026-10-05"}
    assert parent_days(PLAYBACK, "2026-10-05") == {"2026-10-05"}
    # The first day has no day before it: nothing is required that cannot exist.
    assert parent_days(IMPRESSIONS, "2026-10-01") == {"2026-10-01"}


def test_a_day_re_derived_in_one_source_requests_exactly_the_join_days_reading_it(specs):
    """A late impression re-derives impressions day D: dataset days D and D+1 (whose lookback reads D's
    last 30 minutes) are requested, no other; a late play re-derives playback day D: dataset day D only."""
    day, next_day, play_day = "2026-10-07", "2026-10-08", "2026-10-04"
    ticks, now = settled_refresh(specs, {IMPRESSIONS: day, PLAYBACK: play_day})
    assert ticks.at(now + timedelta(minutes=1)) == {}

    ticks.materialize(IMPRESSIONS, [day])  # re-derived, with its verdicts
    # Validated before, so production joins the same run (its blocking checks stop it inside the run).
    assert ticks.at(now + timedelta(minutes=2)) == {SHADOW: {day, next_day}, PRODUCTION: {day, next_day}}
    ticks.materialize(SHADOW, [day, next_day], checks_pass=None)
    ticks.materialize(PRODUCTION, [day, next_day], checks_pass=None)
    assert ticks.at(now + timedelta(minutes=3)) == {}

    ticks.materialize(PLAYBACK, [play_day])
    assert ticks.at(now + timedelta(minutes=4)) == {SHADOW: {play_day}, PRODUCTION: {play_day}}


def fail_settled(ticks: Ticks, key: AssetKey, day: str, passed: bool) -> None:
    """The events' blocking `settled` verdict of a day (the others pass), judging its latest materialization."""
    latest = ticks.instance.fetch_materializations(
        AssetRecordsFilter(asset_key=key, asset_partitions=[day]), limit=1
    ).records[0]
    target = AssetCheckEvaluationTargetMaterializationData(
        storage_id=latest.storage_id, run_id=latest.run_id, timestamp=latest.timestamp
    )
    for check in sorted(k for k in ticks.graph.asset_check_keys if k.asset_key == key):
        ticks.instance.report_runless_asset_event(
            AssetCheckEvaluation(
                asset_key=key,
                check_name=check.name,
                passed=passed or check.name != "settled",
                partition=day,
                target_materialization_data=target,
            )
        )


@pytest.mark.parametrize("impressions_pass", [False, True], ids=["impressions-failed", "impressions-passed"])
def test_a_join_day_waits_for_every_source_day_it_reads(specs, impressions_pass):
    """Aligned completeness: a day whose impressions (or the day before's, read by its lookback) failed
    their blocking checks is not requested, however settled its playback is."""
    day, next_day = "2026-10-07", "2026-10-08"
    ticks = Ticks(project_definitions(package_project()), WATCHED)
    ticks.materialize(PLAYBACK, HISTORY)
    ticks.materialize(IMPRESSIONS, [d for d in HISTORY if d != day])
    # e.g. `settled` failed: a hole in the impressions archive (per_day policy: the day is kept, red)
    ticks.materialize(IMPRESSIONS, [day], checks_pass=None)
    fail_settled(ticks, IMPRESSIONS, day, passed=impressions_pass)
    joined = [d for d in HISTORY if d not in (day, next_day)]
    ticks.materialize(SHADOW, joined)
    ticks.materialize(PRODUCTION, joined)
    lateness = max(s.allowed_lateness for s in specs.streams.values())
    now = midnight(LATEST) + DAY + lateness + HOUR + timedelta(minutes=10)
    ticks.at(now)  # the first tick: every day has just settled (its events are requested again once)
    requested = ticks.at(now + timedelta(minutes=1))
    assert set(requested) <= {SHADOW, PRODUCTION}
    # Day D reads the failed impressions day; D+1 reads its last 30 minutes: neither is requested.
    assert requested.get(SHADOW, set()) == ({day, next_day} if impressions_pass else set())
