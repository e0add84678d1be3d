"""The declarative refresh at hourly grain: an hour settles at its end + lateness, and a late file
re-derives, re-validates and re-promotes exactly the hours whose read windows hold its ingestion hour.

As `test_automation.py`, the conditions are evaluated tick by tick on a project's definitions
(no Spark), for a stream declared `partition_grain: hour` and an hourly dataset over it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from dagster import AssetKey

from backfill_platform.components.registry import demo_spec_data, project_definitions
from backfill_platform.pipeline.archive.listing import hours
from backfill_platform.pipeline.hour_mapping import ArchiveReadWindowMapping, ReadWindow
from backfill_platform.pipeline.partitions import event_partitions, ingestion_partitions
from backfill_platform.specs.durations import HOUR
from backfill_platform.specs.grain import HOURLY
from backfill_platform_tests.support.automation import Ticks
from backfill_platform_tests.support.datasets import hourly_dataset_data, local_daily_data, production
from backfill_platform_tests.support.projects import load_project, write_project

STREAM, DATASET = "playback_hourly_refresh", "views_hourly_refresh"
ARCHIVE = AssetKey(["archive", f"{STREAM}_archive"])
EVENTS = AssetKey(["raw", f"{STREAM}_events"])
SHADOW = AssetKey(["shadow", f"{DATASET}__v1"])
PRODUCTION = production(DATASET).key
WATCHED = (ARCHIVE, EVENTS, SHADOW, PRODUCTION)
FAR_FUTURE = datetime(2027, 1, 1, tzinfo=UTC)


def hourly_stream() -> dict:
    """The demo's playback stream, renamed and partitioned by UTC hour."""
    return {**demo_spec_data("playback"), "name": STREAM, "partition_grain": "hour"}


@pytest.fixture(scope="module")
def hourly(tmp_path_factory):
    """A project's definitions (the hourly stream and an hourly dataset over it) and the stream."""
    specs = [hourly_stream(), hourly_dataset_data("v1", STREAM, DATASET)]
    project = write_project(tmp_path_factory.mktemp("hourly"), specs)
    return project_definitions(project), load_project(project).streams[STREAM]


def hour_keys(first: datetime, last: datetime) -> list[str]:
    """The hour keys from `first` to `last`, both included."""
    return HOURLY.keys_between(first, last + HOUR)


def read_hours(stream, key: str) -> set[str]:
    """The ingestion hours an event hour's run lists (`ingest_window`), within the archive."""
    first = ingestion_partitions(stream).start
    return {HOURLY.key(h) for h in ReadWindow.of(stream, *HOURLY.bounds(key)).hours() if h >= first}


def test_the_mapping_maps_an_event_hour_to_exactly_the_ingestion_hours_it_reads(hourly):
    _, stream = hourly
    mapping = ArchiveReadWindowMapping.for_stream(stream)
    events, archive = event_partitions(stream), ingestion_partitions(stream)
    start = datetime(2026, 10, 2, tzinfo=UTC)
    readers: dict[str, set[str]] = {}
    for key in hour_keys(start, start + timedelta(days=2)):
        upstream = mapping.get_upstream_mapped_partitions_result_for_partitions(
            events.subset_with_partition_keys([key]), events, archive, current_time=FAR_FUTURE
        ).partitions_subset
        assert set(upstream.get_partition_keys()) == read_hours(stream, key), key
        for hour in read_hours(stream, key):
            readers.setdefault(hour, set()).add(key)
    late = HOURLY.key(start + timedelta(hours=30))
    downstream = mapping.get_downstream_partitions_for_partitions(
        archive.subset_with_partition_keys([late]), archive, events, current_time=FAR_FUTURE
    )
    assert set(downstream.get_partition_keys()) == readers[late]


def test_a_settled_hour_is_refreshed_and_a_late_file_re_promotes_exactly_the_hours_reading_it(hourly):
    definitions, stream = hourly
    ticks = Ticks(definitions, WATCHED)
    first, last = datetime(2026, 10, 1, tzinfo=UTC), datetime(2026, 10, 3, 11, tzinfo=UTC)  # from the first
    history = hour_keys(first, last)
    for key in (EVENTS, SHADOW, PRODUCTION):
        ticks.materialize(key, history)  # with passing verdicts
    archive_hours = [HOURLY.key(h) for h in hours(first - timedelta(days=1), last + timedelta(days=1))]
    for hour in archive_hours:
        ticks.observe(ARCHIVE, hour, "v1")
    # The next hour settles at its end + allowed lateness + 1 h, not at a day's end.
    settles = last + 2 * HOUR + stream.allowed_lateness + HOUR
    assert ticks.at(settles - timedelta(minutes=5)) == {}
    requested = ticks.at(settles + timedelta(minutes=1))
    assert requested[EVENTS] == {HOURLY.key(last + HOUR)}

    ticks.materialize(EVENTS, [HOURLY.key(last + HOUR)])
    ticks.materialize(SHADOW, [HOURLY.key(last + HOUR)])
    ticks.materialize(PRODUCTION, [HOURLY.key(last + HOUR)])
    now = settles + timedelta(minutes=10)
    assert EVENTS not in ticks.at(now)

    late = HOURLY.key(first + timedelta(hours=44))
    ticks.observe(ARCHIVE, late, "late")  # one file added to one ingestion hour
    affected = {key for key in history if late in read_hours(stream, key)}
    assert 0 < len(affected) < len(history) // 2
    # Their verdicts passed before: events, shadow and production of exactly those hours, in one run.
    assert ticks.at(now + timedelta(minutes=1)) == {EVENTS: affected, SHADOW: affected, PRODUCTION: affected}


def test_a_late_hour_re_promotes_the_new_york_days_that_read_it(tmp_path):
    """Days rolled up from hours: the exact event-time window mapping (in the code location, as the
    refresh's sensor evaluates) requests the New York days whose hours a late file changed, and no other."""
    daily = "plays_refresh_new_york"
    project = write_project(tmp_path, [hourly_stream(), local_daily_data(daily, STREAM, "America/New_York")])
    definitions, stream = project_definitions(project), load_project(project).streams[STREAM]
    shadow, prod = AssetKey(["shadow", f"{daily}__v1"]), production(daily).key
    ticks = Ticks(definitions, (ARCHIVE, EVENTS, shadow, prod))
    first, last = datetime(2026, 10, 1, tzinfo=UTC), datetime(2026, 10, 4, 3, tzinfo=UTC)
    hours_done = hour_keys(first, last)
    days_done = ["2026-10-01", "2026-10-02", "2026-10-03"]  # New York days: 04:00 to 04:00 UTC
    ticks.materialize(EVENTS, hours_done)
    for key in (shadow, prod):
        ticks.materialize(key, days_done)
    for hour in (HOURLY.key(h) for h in hours(first - timedelta(days=1), last + timedelta(days=1))):
        ticks.observe(ARCHIVE, hour, "v1")
    now = datetime(2026, 10, 4, 13, 10, tzinfo=UTC)  # 03:00's hour has settled; the next has not
    assert ticks.at(now) == {}

    late = "2026-10-02-02:00"  # read by the hours 2026-10-01 17:00 (lateness) to 2026-10-02 04:00 (skew)
    ticks.observe(ARCHIVE, late, "late")
    affected = {key for key in hours_done if late in read_hours(stream, key)}
    # The hours first: a day is not of their partitions, so it cannot join their run (Dagster requests a
    # parent and its child together only within one partitions definition); it follows once they ran.
    assert ticks.at(now + timedelta(minutes=1)) == {EVENTS: affected}
    graph = definitions.resolve_asset_graph()
    days = graph.get_partition_mapping(shadow, EVENTS).get_downstream_partitions_for_partitions(
        graph.get(EVENTS).partitions_def.subset_with_partition_keys(sorted(affected)),
        graph.get(EVENTS).partitions_def,
        graph.get(shadow).partitions_def,
        current_time=now,
    )
    # 17:00 to 04:00 UTC is New York's 2026-10-01 13:00 to 2026-10-02 00:00: the two days holding them.
    assert set(days.get_partition_keys()) == {"2026-10-01", "2026-10-02"}
