"""The daily refresh recovers by itself: a refused or failed day is requested again, a changed read always is.

The graph (archive → events → shadow → production) is a replica of the factory's with the project's own
automation conditions, its own mapping and per-day verdicts; runs are real in-process Dagster runs
(`materialize`) on a temporary instance, so a refused promotion is a failed run, as in the daemon. The
conditions are evaluated tick by tick with `evaluate_automation_conditions` at chosen times.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest
from dagster import (
    AssetCheckSpec,
    AssetDep,
    AssetKey,
    AssetObservation,
    AssetSpec,
    DataVersionsByPartition,
    Failure,
    evaluate_automation_conditions,
    instance_for_test,
    materialize,
    multi_asset,
    observable_source_asset,
)
from dagster._core.definitions.data_version import DATA_VERSION_TAG

from backfill_platform.orchestration.automation.conditions import (
    archive_observation_condition,
    events_condition,
    production_condition,
    shadow_condition,
)
from backfill_platform.pipeline.archive.listing import hours
from backfill_platform.pipeline.events.read_record import read_version, window_hours
from backfill_platform.pipeline.hour_mapping import ArchiveReadWindowMapping
from backfill_platform.pipeline.partitions import backfill_policy, event_partitions, ingestion_partitions
from backfill_platform.pipeline.validation.verdicts import PartitionVerdict, partition_outcomes
from backfill_platform.specs.durations import DAY, HOUR, midnight

MINUTE = timedelta(minutes=1)
ARCHIVE, EVENTS = AssetKey(["archive", "a"]), AssetKey(["raw", "events"])
SHADOW, PRODUCTION = AssetKey(["shadow", "v2"]), AssetKey(["prod", "production"])
NAMES = {EVENTS: "events", SHADOW: "shadow", PRODUCTION: "production"}
LATE_DAY = "2026-10-08"
LATE_HOUR = "2026-10-08-12:00"
DIVERGENCE = "divergence_vs_production"


class Refresh:
    """The replica graph, an instance, the automation cursor and the archive's hour versions."""

    def __init__(self, stream, instance):
        self.stream, self.instance, self.cursor = stream, instance, None
        self.refuse: set[AssetKey] = set()  # steps that fail (the gate refusing, a check failing)
        self.diverge = False  # the shadow differs from production (its divergence check warns)
        self.versions: dict[str, str] = {}
        # A run in flight when a file arrived: what it listed, and when (None: what is there, now).
        self.listed: tuple[dict[str, str], float] | None = None
        self.runs = 0
        days, archive_hours = event_partitions(stream), ingestion_partitions(stream)

        @observable_source_asset(
            key=ARCHIVE,
            partitions_def=archive_hours,
            automation_condition=archive_observation_condition(stream),
        )
        def archive():
            return DataVersionsByPartition({})

        def step(key, parent, condition, check, mapping=None, warning=None):
            @multi_asset(
                name=NAMES[key],
                specs=[
                    AssetSpec(
                        key,
                        deps=[AssetDep(parent, partition_mapping=mapping)],
                        partitions_def=days,
                        skippable=True,
                        automation_condition=condition,
                    )
                ],
                check_specs=[
                    AssetCheckSpec(name, asset=key, blocking=name != warning, partitions_def=days)
                    for name in filter(None, [check, warning])
                ],
                can_subset=True,
                backfill_policy=backfill_policy(None),
            )
            def _step(context) -> Iterator:
                if key in self.refuse:
                    raise Failure(f"{NAMES[key]} refused")
                chosen = sorted(context.partition_keys)
                if key == EVENTS:  # what the platform's events step records: the read of each day
                    versions, at = self.listed or (self.versions, time.time())
                    for day in chosen:
                        context.log_event(self.read_record(day, versions, at))
                verdicts = [PartitionVerdict(check, day, True) for day in chosen]
                if warning:  # a warning check, as divergence from production
                    verdicts += [
                        PartitionVerdict(warning, day, not self.diverge, {}, blocking=False) for day in chosen
                    ]
                yield from partition_outcomes(context, key, verdicts, {day: {} for day in chosen}, {}, False)

            return _step

        mapping = ArchiveReadWindowMapping.for_stream(stream)
        self.assets = [
            archive,
            step(EVENTS, ARCHIVE, events_condition(stream, ARCHIVE), "reconciliation", mapping),
            step(SHADOW, EVENTS, shadow_condition([stream]), "row_counts", warning=DIVERGENCE),
            step(PRODUCTION, SHADOW, production_condition([stream]), "promotion_verified"),
        ]

    def read_record(self, day: str, versions: dict[str, str], at: float) -> AssetObservation:
        version = read_version(versions, window_hours(self.stream, day))
        return AssetObservation(
            asset_key=EVENTS, partition=day, tags={DATA_VERSION_TAG: f"{version}@{at:.3f}"}
        )

    def observe(self, changes: dict[str, str] | None = None) -> None:
        """An archive observation: every hour's version (the changed ones new)."""
        self.versions.update(changes or {})
        for hour, version in self.versions.items():
            self.instance.report_runless_asset_event(
                AssetObservation(asset_key=ARCHIVE, partition=hour, tags={DATA_VERSION_TAG: version})
            )

    def tick(self, when: datetime) -> dict[AssetKey, set[str]]:
        result = evaluate_automation_conditions(
            defs=self.assets, instance=self.instance, cursor=self.cursor, evaluation_time=when
        )
        self.cursor = result.cursor
        return {
            key: set(result.get_requested_partitions(key))
            for key in (EVENTS, SHADOW, PRODUCTION)
            if result.get_num_requested(key)
        }

    def run(self, keys, day: str) -> bool:
        self.runs += 1
        result = materialize(
            self.assets, selection=list(keys), partition_key=day, instance=self.instance, raise_on_error=False
        )
        return result.success


@pytest.fixture
def refresh(specs):
    with instance_for_test() as instance:
        stream = specs.streams["playback"]
        r = Refresh(stream, instance)
        r.versions = {
            h.strftime("%Y-%m-%d-%H:%M"): "v1" for h in hours(midnight("2026-10-04"), midnight("2026-10-10"))
        }
        r.observe()
        for day in [f"2026-10-0{i}" for i in range(1, 9)]:
            assert r.run([EVENTS, SHADOW, PRODUCTION], day)
        r.now = midnight(LATE_DAY) + DAY + stream.allowed_lateness + HOUR + 10 * MINUTE
        assert r.tick(r.now) == {}
        yield r


def later(r: Refresh) -> datetime:
    r.now += MINUTE
    return r.now


def test_a_promotion_refused_in_its_chain_is_requested_again_on_the_next_tick(refresh):
    r = refresh
    r.observe({LATE_HOUR: "v2"})  # a late file
    requested = r.tick(later(r))
    assert requested[PRODUCTION] >= {LATE_DAY} and requested[EVENTS] == requested[PRODUCTION]
    r.refuse = {PRODUCTION}  # the gate refuses inside the chain's run
    assert not r.run([EVENTS, SHADOW, PRODUCTION], LATE_DAY)
    r.refuse = set()
    assert r.tick(later(r)).get(PRODUCTION) == {LATE_DAY}
    assert r.run([PRODUCTION], LATE_DAY)
    assert LATE_DAY not in r.tick(later(r)).get(PRODUCTION, set())


def test_a_failure_retries_once_then_waits_for_a_new_trigger(refresh):
    r = refresh
    r.observe({LATE_HOUR: "v2"})
    r.tick(later(r))
    r.refuse = {PRODUCTION}
    assert not r.run([EVENTS, SHADOW, PRODUCTION], LATE_DAY)
    assert r.tick(later(r)).get(PRODUCTION) == {LATE_DAY}  # the shadow moved: one retry
    assert not r.run([PRODUCTION], LATE_DAY)  # refused again: nothing new since, so quiet
    for _ in range(3):
        assert PRODUCTION not in r.tick(later(r))
    r.refuse = set()
    assert r.run([SHADOW], LATE_DAY)  # the shadow re-validated: a new trigger
    assert r.tick(later(r)).get(PRODUCTION) == {LATE_DAY}


def test_the_first_observation_re_derives_nothing_that_read_the_same_files(specs):
    with instance_for_test() as instance:
        r = Refresh(specs.streams["playback"], instance)
        r.versions = {
            h.strftime("%Y-%m-%d-%H:%M"): "v1" for h in hours(midnight("2026-10-04"), midnight("2026-10-10"))
        }
        for day in [f"2026-10-0{i}" for i in range(1, 9)]:  # a backfill before any observation
            assert r.run([EVENTS, SHADOW, PRODUCTION], day)
        now = midnight(LATE_DAY) + DAY + r.stream.allowed_lateness + HOUR + 10 * MINUTE
        assert r.tick(now) == {}
        r.observe()  # the archive's first observation: the same files the days read
        assert r.tick(now + MINUTE) == {}
        assert r.tick(now + 2 * MINUTE) == {}


def test_a_late_file_observed_while_its_day_runs_is_still_read(refresh):
    """The day's run listed the archive before the file arrived and committed after it was observed."""
    r = refresh
    r.listed = (dict(r.versions), time.time())
    r.observe({LATE_HOUR: "v2"})
    assert r.run([EVENTS, SHADOW, PRODUCTION], LATE_DAY)  # the run in flight commits what it listed
    r.listed = None
    assert LATE_DAY in r.tick(later(r)).get(EVENTS, set())
    assert r.run([EVENTS, SHADOW, PRODUCTION], LATE_DAY)
    assert LATE_DAY not in r.tick(later(r)).get(EVENTS, set())
    r.observe()  # the next observation: the day read what is there now
    assert LATE_DAY not in r.tick(later(r)).get(EVENTS, set())


def test_a_shadow_re_validated_alone_that_diverges_from_production_is_promoted(refresh):
    """After a late file the shadow differs from production by design: its divergence check warns, and
    the day must still be promoted (Dagster counts a failed warning as a failed blocking check)."""
    r = refresh
    r.observe({LATE_HOUR: "v2"})
    r.tick(later(r))
    r.refuse = {PRODUCTION}
    assert not r.run([EVENTS, SHADOW, PRODUCTION], LATE_DAY)
    r.refuse = set()
    r.diverge = True
    assert r.run([SHADOW], LATE_DAY)  # re-validated alone, diverging: a warning
    assert r.tick(later(r)).get(PRODUCTION) == {LATE_DAY}
