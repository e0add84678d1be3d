"""Declarative daily refresh: the exact archive → events mapping and the automation conditions.

The conditions are evaluated with `dagster.evaluate_automation_conditions` on a project's definitions (no
Spark): runs are simulated by reporting materializations, archive observations (data versions) and check
evaluations to an ephemeral instance, tick by tick.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from dagster import (
    AssetKey,
    DagsterInstance,
    DailyPartitionsDefinition,
    Definitions,
    HourlyPartitionsDefinition,
    build_sensor_context,
)
from dagster._core.definitions.sensor_definition import SensorType
from dagster.components.core.component_tree import ComponentTreeException
from pydantic import ValidationError

from backfill_platform.components.registry import demo_spec_data, package_project, project_definitions
from backfill_platform.orchestration.automation.sensor import INTERVAL_ENV, SENSOR_NAME
from backfill_platform.pipeline.archive.listing import hours
from backfill_platform.pipeline.hour_mapping import ArchiveReadWindowMapping, ReadWindow
from backfill_platform.pipeline.partitions import event_partitions, ingestion_partitions
from backfill_platform.specs.durations import DAY, HOUR, format_duration, midnight
from backfill_platform.specs.spec_set import SpecSet
from backfill_platform.specs.stream import StreamSpec
from backfill_platform_tests.support.automation import Ticks, day_keys
from backfill_platform_tests.support.datasets import production
from backfill_platform_tests.support.projects import write_project

ARCHIVE = AssetKey(["archive", "playback_archive"])
EVENTS = AssetKey(["raw", "playback_events"])
SHADOW_V1 = AssetKey(["shadow", "views_per_title__v1"])
SHADOW = AssetKey(["shadow", "views_per_title__v2"])  # active_version: v2
PRODUCTION = production("views_per_title").key
WATCHED = (ARCHIVE, EVENTS, SHADOW_V1, SHADOW, PRODUCTION)  # what a tick reports

# The playback spec's own setting, a long lateness with a large skew, and a lateness that is not whole hours.
SETTINGS = {
    "playback-8h-15m": {},
    "36h-45m": {"allowed_lateness": timedelta(hours=36), "clock_skew": timedelta(minutes=45)},
}
MAPPING_SETTINGS = {
    **SETTINGS,
    "90m-0m": {"allowed_lateness": timedelta(minutes=90), "clock_skew": timedelta()},
}
FAR_FUTURE = datetime(2027, 1, 1, tzinfo=UTC)


def stream_with(specs: SpecSet, changes: dict) -> StreamSpec:
    return specs.streams["playback"].model_copy(update=changes)


@pytest.fixture
def definitions_with(specs: SpecSet, tmp_path: Path):
    """The definitions of a project holding the demo's streams and datasets with `playback` changed, and
    that stream: a team's project, loaded as its code location loads it."""

    def build(changes: dict) -> tuple[Definitions, StreamSpec]:
        changed = {field: format_duration(value) for field, value in changes.items()}
        project = write_project(tmp_path, [{**demo_spec_data("playback"), **changed}], demo=True)
        return project_definitions(project), stream_with(specs, changes)

    return build


def hour_key(hour: datetime) -> str:
    return hour.strftime("%Y-%m-%d-%H:%M")


def read_hours(stream: StreamSpec, day: str) -> set[str]:
    """What `ingest_window` lists for a day (the reference the mapping must match), within the archive."""
    first = ingestion_partitions(stream).start
    return {
        hour_key(h) for h in ReadWindow.of(stream, midnight(day), midnight(day) + DAY).hours() if h >= first
    }


def settles_at(stream: StreamSpec, day: str) -> datetime:
    return midnight(day) + DAY + stream.allowed_lateness + HOUR


# ---------------------------------------------------------------------------------------------------
# The mapping, against `ReadWindow.hours()` (what the events asset really reads)


@pytest.mark.parametrize("changes", MAPPING_SETTINGS.values(), ids=MAPPING_SETTINGS.keys())
def test_mapping_maps_each_day_to_exactly_the_hours_it_reads(specs, changes):
    stream = stream_with(specs, changes)
    mapping = ArchiveReadWindowMapping.for_stream(stream)
    days, archive = event_partitions(stream), ingestion_partitions(stream)
    for day in day_keys("2026-10-01", "2026-10-12"):
        result = mapping.get_upstream_mapped_partitions_result_for_partitions(
            days.subset_with_partition_keys([day]), days, archive, current_time=FAR_FUTURE
        )
        assert set(result.partitions_subset.get_partition_keys()) == read_hours(stream, day), day
        assert result.required_but_nonexistent_subset.is_empty


@pytest.mark.parametrize("changes", MAPPING_SETTINGS.values(), ids=MAPPING_SETTINGS.keys())
def test_mapping_maps_each_hour_to_exactly_the_days_whose_window_holds_it(specs, changes):
    stream = stream_with(specs, changes)
    mapping = ArchiveReadWindowMapping.for_stream(stream)
    days, archive = event_partitions(stream), ingestion_partitions(stream)
    all_days = day_keys("2026-10-01", "2026-10-20")
    readers: dict[str, set[str]] = {}
    for day in all_days:
        for hour in read_hours(stream, day):
            readers.setdefault(hour, set()).add(day)
    for hour in hours(midnight("2026-09-30"), midnight("2026-10-15")):
        key = hour_key(hour)
        mapped = mapping.get_downstream_partitions_for_partitions(
            archive.subset_with_partition_keys([key]), archive, days, current_time=FAR_FUTURE
        )
        assert set(mapped.get_partition_keys()) == readers.get(key, set()), key


@pytest.mark.parametrize("changes", MAPPING_SETTINGS.values(), ids=MAPPING_SETTINGS.keys())
def test_mapping_of_a_subset_is_the_union_of_its_partitions(specs, changes):
    stream = stream_with(specs, changes)
    mapping = ArchiveReadWindowMapping.for_stream(stream)
    days, archive = event_partitions(stream), ingestion_partitions(stream)
    some_days = ["2026-10-02", "2026-10-03", "2026-10-04", "2026-10-09"]
    upstream = mapping.get_upstream_mapped_partitions_result_for_partitions(
        days.subset_with_partition_keys(some_days), days, archive, current_time=FAR_FUTURE
    ).partitions_subset
    assert set(upstream.get_partition_keys()) == set().union(*(read_hours(stream, d) for d in some_days))

    some_hours = ["2026-10-03-00:00", "2026-10-03-01:00", "2026-10-05-23:00", "2026-10-08-12:00"]
    downstream = mapping.get_downstream_partitions_for_partitions(
        archive.subset_with_partition_keys(some_hours), archive, days, current_time=FAR_FUTURE
    )
    expected = {d for d in day_keys("2026-10-01", "2026-10-12") if read_hours(stream, d) & set(some_hours)}
    assert set(downstream.get_partition_keys()) == expected


def test_mapping_leaves_out_hours_that_do_not_exist_yet(specs):
    stream = specs.streams["playback"]
    mapping = ArchiveReadWindowMapping.for_stream(stream)
    days, archive = event_partitions(stream), ingestion_partitions(stream)
    now = midnight("2026-10-10") + timedelta(hours=3, minutes=30)  # the hour 03:00 is not complete
    result = mapping.get_upstream_mapped_partitions_result_for_partitions(
        days.subset_with_partition_keys(["2026-10-09"]), days, archive, current_time=now
    )
    keys = sorted(result.partitions_subset.get_partition_keys())
    assert keys[0] == "2026-10-08-22:00" and keys[-1] == "2026-10-10-02:00"
    assert result.required_but_nonexistent_subset.is_empty


def test_mapping_refuses_other_partitions(specs):
    mapping = ArchiveReadWindowMapping.for_stream(specs.streams["playback"])
    daily = DailyPartitionsDefinition(start_date="2026-10-01", timezone="UTC")
    with pytest.raises(Exception, match="hourly UTC archive partitions"):
        mapping.validate_partition_mapping(daily, daily)
    with pytest.raises(Exception, match="hourly UTC archive partitions"):
        mapping.validate_partition_mapping(
            HourlyPartitionsDefinition(start_date="2026-10-01-00:00", timezone="Europe/Paris"), daily
        )


# ---------------------------------------------------------------------------------------------------
# Wiring


def test_definitions_wire_the_daily_refresh(specs):
    definitions = project_definitions(package_project())
    graph = definitions.resolve_asset_graph()
    assert isinstance(graph.get_partition_mapping(EVENTS, ARCHIVE), ArchiveReadWindowMapping)
    for key in (ARCHIVE, EVENTS, SHADOW, PRODUCTION):
        assert graph.get(key).automation_condition is not None, key
    assert graph.get(SHADOW_V1).automation_condition is None  # not the active version
    sensor = definitions.get_sensor_def(SENSOR_NAME)
    # Evaluated in the code location: the mapping and SettledDays are not in the daemon's asset graph.
    assert sensor.sensor_type == SensorType.AUTOMATION


def test_the_refresh_interval_is_dagsters_default_unless_the_environment_says(specs, monkeypatch):
    monkeypatch.delenv(INTERVAL_ENV, raising=False)
    assert project_definitions(package_project()).get_sensor_def(SENSOR_NAME).minimum_interval_seconds == 30
    monkeypatch.setenv(INTERVAL_ENV, "5")
    assert project_definitions(package_project()).get_sensor_def(SENSOR_NAME).minimum_interval_seconds == 5
    for bad in ("0", "2.5", "soon"):
        monkeypatch.setenv(INTERVAL_ENV, bad)
        # Refused as the code location refuses it: Dagster's tree error, the Lakehouse's refusal its cause.
        with pytest.raises(ComponentTreeException) as refused:
            project_definitions(package_project())
        assert isinstance(refused.value.__cause__, ValueError)
        assert re.search(
            f"{INTERVAL_ENV} must be a whole number of seconds.*{bad!r}", str(refused.value.__cause__)
        )


def test_the_sensor_evaluates_the_conditions_in_the_code_location(specs):
    """The sensor's own evaluation (what the daemon asks the code server for), at the real clock."""
    definitions = project_definitions(package_project())
    sensor = definitions.get_sensor_def(SENSOR_NAME)
    context = build_sensor_context(
        instance=DagsterInstance.ephemeral(), repository_def=definitions.get_repository_def()
    )
    result = sensor(context)
    # An empty instance: every settled day of the last 7 is missing, requested as one backfill (which the
    # events' single-run backfill policy runs as one run).
    (request,) = result.run_requests
    requested = set(request.asset_graph_subset.partitions_subsets_by_asset_key[EVENTS].get_partition_keys())
    today = datetime.now(UTC).date()
    last_seven = {(today - timedelta(days=i)).isoformat() for i in range(1, 8)}
    assert last_seven - {(today - DAY).isoformat()} <= requested <= last_seven


def test_spec_refresh_fields_are_validated(specs):
    stream = specs.streams["playback"]
    assert stream.refresh_horizon == timedelta(days=7)
    assert stream.archive_observation_cron == "0 * * * *"
    data = stream.model_dump()
    with pytest.raises(ValidationError, match="refresh_horizon"):
        StreamSpec.model_validate({**data, "refresh_horizon": "9h"})
    with pytest.raises(ValidationError, match="cron"):
        StreamSpec.model_validate({**data, "archive_observation_cron": "every hour"})
    assert StreamSpec.model_validate({**data, "refresh_horizon": "3d"}).refresh_horizon == timedelta(days=3)


# ---------------------------------------------------------------------------------------------------
# Tick by tick (`support.automation.Ticks`: runs simulated by reported events)


@pytest.mark.parametrize("changes", SETTINGS.values(), ids=SETTINGS.keys())
def test_a_new_settled_day_requests_events_then_shadow_then_production(specs, definitions_with, changes):
    definitions, stream = definitions_with(changes)
    ticks = Ticks(definitions, WATCHED)
    history = day_keys("2026-10-01", "2026-10-08")
    for key in (EVENTS, SHADOW, PRODUCTION):
        ticks.materialize(key, history, checks_pass=None)  # no check verdicts yet
    day = "2026-10-09"
    settled = settles_at(stream, day)

    assert ticks.at(settled - HOUR) == {}  # the first tick only records state
    latest_hour = hour_key(settled.replace(minute=0) - HOUR)
    assert ticks.at(settled + timedelta(minutes=1)) == {ARCHIVE: {latest_hour}, EVENTS: {day}}
    # Still missing: no run was launched here (in the daemon, the launched run stops a repeat request).
    assert ticks.at(settled + timedelta(minutes=2)) == {EVENTS: {day}}

    ticks.materialize(EVENTS, [day])
    assert ticks.at(settled + timedelta(minutes=3)) == {SHADOW: {day}}
    ticks.materialize(SHADOW, [day])
    assert ticks.at(settled + timedelta(minutes=4)) == {PRODUCTION: {day}}
    ticks.materialize(PRODUCTION, [day])
    assert ticks.at(settled + timedelta(minutes=5)) == {}


def test_a_day_whose_checks_passed_is_refreshed_as_one_run(specs, definitions_with):
    """`all_deps_blocking_checks_passed` admits a parent requested on the same tick when its verdict for
    that day passed before: a late file re-runs events, shadow and production of a day in one run (whose
    blocking checks stop it inside the run). A new day has no verdict yet: its chain runs step by step."""
    definitions, stream = definitions_with({})
    ticks = Ticks(definitions, WATCHED)
    for key in (EVENTS, SHADOW, PRODUCTION):
        ticks.materialize(key, day_keys("2026-10-01", "2026-10-09"))  # with passing verdicts
    now = settles_at(stream, "2026-10-09") + timedelta(minutes=10)
    assert ticks.at(now) == {}
    ticks.observe(ARCHIVE, "2026-10-08-05:00", "late")
    affected = {"2026-10-07", "2026-10-08"}
    assert ticks.at(now + timedelta(minutes=1)) == {EVENTS: affected, SHADOW: affected, PRODUCTION: affected}


@pytest.mark.parametrize("changes", SETTINGS.values(), ids=SETTINGS.keys())
def test_an_unsettled_day_requests_nothing_until_its_horizon_passes(specs, definitions_with, changes):
    definitions, stream = definitions_with(changes)
    ticks = Ticks(definitions, WATCHED)
    for key in (EVENTS, SHADOW, PRODUCTION):
        ticks.materialize(key, day_keys("2026-10-01", "2026-10-08"))
    day = "2026-10-09"
    settled = settles_at(stream, day)

    def requested_days(when: datetime) -> set[str]:
        requested = ticks.at(when)
        requested.pop(ARCHIVE, None)
        return set().union(*requested.values())

    # From the day's own end until just before its horizon, the day exists and nothing is requested for it
    # (with a 36h lateness, the day before settles in between: that one is requested).
    for when in (midnight(day) + DAY + timedelta(minutes=5), settled - timedelta(minutes=1)):
        assert day not in requested_days(when), when
    # A day run before it settled (provisional) is run again once it settles.
    ticks.materialize(EVENTS, [day])
    assert day not in requested_days(settled - timedelta(seconds=30))
    assert ticks.at(settled)[EVENTS] == {day}


LATE_HOURS = {
    "mid-morning": "2026-10-08-05:00",
    "first-hour-of-next-day-window": "2026-10-07-22:00",
    "last-hour-before-it": "2026-10-07-21:00",
    "lateness-tail": "2026-10-06-08:00",
    "outside-horizon": "2026-10-01-05:00",
}


@pytest.mark.parametrize("late_hour", LATE_HOURS.values(), ids=LATE_HOURS.keys())
@pytest.mark.parametrize("changes", SETTINGS.values(), ids=SETTINGS.keys())
def test_a_late_file_requests_exactly_the_affected_event_days(specs, definitions_with, changes, late_hour):
    definitions, stream = definitions_with(changes)
    ticks = Ticks(definitions, WATCHED)
    history = day_keys("2026-10-01", "2026-10-09")
    for key in (EVENTS, SHADOW, PRODUCTION):
        ticks.materialize(key, history)
    archive_hours = [hour_key(h) for h in hours(midnight("2026-09-30"), midnight("2026-10-11"))]
    for hour in archive_hours:
        ticks.observe(ARCHIVE, hour, "v1")
    now = settles_at(stream, "2026-10-09") + timedelta(minutes=10)  # every materialized day has settled
    assert ticks.at(now) == {}

    ticks.observe(ARCHIVE, late_hour, "v2")  # a file added to (or replaced in) one ingestion hour
    for hour in archive_hours:  # the next observation: every other hour unchanged
        if hour != late_hour:
            ticks.observe(ARCHIVE, hour, "v1")
    requested = ticks.at(now + timedelta(minutes=5))

    horizon = {
        d for d in history if midnight(d) + DAY > midnight(now.date().isoformat()) - stream.refresh_horizon
    }
    affected = {d for d in history if late_hour in read_hours(stream, d)} & horizon
    assert requested.get(EVENTS, set()) == affected
    # Verdicts passed before, so the chain joins the same run; for those days only, never another one.
    assert all(days <= affected for days in requested.values()) and ARCHIVE not in requested
    if late_hour == LATE_HOURS["outside-horizon"]:
        assert affected == set()
    else:
        assert affected, "the case must exercise the mapping"
    # Handled: nothing more on the next tick.
    ticks.materialize(EVENTS, sorted(affected), checks_pass=None)
    assert EVENTS not in ticks.at(now + timedelta(minutes=6))


FAILURES = {
    "checks-pass": (True, True),
    "check-failed-day-kept": (False, True),  # the per_day policy: materialized, verdict failed
    "check-failed-day-held-back": (False, False),  # all-or-nothing (default): not materialized
}


@pytest.mark.parametrize(("checks_pass", "failed_days_kept"), FAILURES.values(), ids=FAILURES.keys())
def test_a_failed_blocking_check_on_the_events_stops_the_chain(
    specs, definitions_with, checks_pass, failed_days_kept
):
    definitions, stream = definitions_with({})
    ticks = Ticks(definitions, WATCHED)
    for key in (EVENTS, SHADOW, PRODUCTION):
        ticks.materialize(key, day_keys("2026-10-01", "2026-10-08"))
    day = "2026-10-09"
    settled = settles_at(stream, day)
    ticks.at(settled - HOUR)
    assert ticks.at(settled + timedelta(minutes=1))[EVENTS] == {day}

    ticks.materialize(EVENTS, [day], checks_pass=checks_pass, failed_days_kept=failed_days_kept)
    for minutes in (2, 3, 30):  # tick after tick
        requested = ticks.at(settled + timedelta(minutes=minutes))
        requested.pop(ARCHIVE, None)
        if checks_pass:
            assert requested == {SHADOW: {day}}
            break
        # Nothing downstream. (A held-back day has no materialization, so these simulated ticks, which
        # record no failed run, request its events again; in a real run Dagster marks it failed.)
        assert SHADOW not in requested and PRODUCTION not in requested
        if failed_days_kept:
            assert requested == {}
