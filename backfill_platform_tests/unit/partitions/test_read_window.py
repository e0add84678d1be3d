"""The read window (`pipeline/hour_mapping.py`): the exact ingestion hours a day, an hour and a New York day
across the end of daylight saving time read, and a run's plan of them (`ReadPlan`), computed once from its
range and handed to every step: each partition's window, the range's, and a range narrowed at its start.
On the demo stream's spec (8 h allowed lateness, 15 min clock skew)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from backfill_platform.pipeline.hour_mapping import ArchiveReadWindowMapping, ReadPlan, ReadWindow
from backfill_platform.specs.durations import HOUR
from backfill_platform.specs.grain import Grain
from backfill_platform_tests.support.days import D2, D3, utc
from backfill_platform_tests.support.session import START


def _hours(first: datetime, last: datetime) -> list[datetime]:
    """Every hour from `first` to `last`, both included."""
    return [first + n * HOUR for n in range((last - first) // HOUR + 1)]


def test_a_day_reads_from_the_hour_holding_its_start_less_the_skew_to_its_end_plus_lateness(playback):
    window = ReadWindow.of(playback, *playback.grain.bounds(D2))
    assert (window.start, window.end) == (utc(D2), utc(D3))
    # 15 min skew + the hour's own length before; 8 h lateness + the hour's own length after.
    assert (window.low, window.high) == (utc(START, 22) + timedelta(minutes=45), utc(D3, 9))
    assert window.first_hour == utc(START, 22)
    assert window.hours() == _hours(utc(START, 22), utc(D3, 8))
    assert len(window.hours()) == 35


def test_an_hour_reads_the_hours_around_it(playback):
    hourly = playback.model_copy(update={"partition_grain": "hour"})
    key = "2026-10-02-14:00"
    plan = ReadPlan.for_partitions(hourly, [key])
    window = plan.partitions[key]
    assert (window.start, window.end) == (utc(D2, 14), utc(D2, 15))
    assert (window.low, window.high) == (utc(D2, 12) + timedelta(minutes=45), utc(D3, 0))
    assert window.hours() == _hours(utc(D2, 12), utc(D2, 23))


def test_a_new_york_day_across_the_end_of_daylight_saving_reads_its_25_hours_and_the_margins(playback):
    # 2026-11-01 in New York: 00:00 EDT (04:00 UTC) to the next 00:00 EST (05:00 UTC), 25 hours.
    start, end = Grain("day", "America/New_York").bounds("2026-11-01")
    assert (start, end) == (datetime(2026, 11, 1, 4, tzinfo=UTC), datetime(2026, 11, 2, 5, tzinfo=UTC))
    window = ReadWindow.of(playback, start, end)
    assert window.low == datetime(2026, 11, 1, 2, 45, tzinfo=UTC)
    assert window.high == datetime(2026, 11, 2, 14, tzinfo=UTC)
    assert window.hours() == _hours(
        datetime(2026, 11, 1, 2, tzinfo=UTC), datetime(2026, 11, 2, 13, tzinfo=UTC)
    )


def test_a_plan_holds_each_partitions_window_and_the_ranges_their_union(playback):
    plan = ReadPlan.for_range(playback, utc(START), utc(D3) + timedelta(days=1))
    assert plan.keys == [START.isoformat(), D2.isoformat(), D3.isoformat()]
    for key, window in plan.partitions.items():
        assert window == ReadWindow.of(playback, *playback.grain.bounds(key))
        # What Dagster is told an event day reads is the same hours (the mapping answers in whole hours).
        mapping = ArchiveReadWindowMapping.for_stream(playback)
        assert mapping.hours_window(window.start, window.end) == (window.first_hour, window.high)
    assert plan.window == ReadWindow.of(playback, utc(START), utc(D3) + timedelta(days=1))
    union = sorted({hour for window in plan.partitions.values() for hour in window.hours()})
    assert plan.window.hours() == union
    assert (plan.before, plan.after) == (timedelta(hours=1, minutes=15), timedelta(hours=9))


def test_a_plan_narrowed_at_its_start_keeps_the_later_partitions_windows(playback):
    plan = ReadPlan.for_range(playback, utc(START), utc(D3) + timedelta(days=1))
    narrowed = plan.since(utc(D2))
    assert narrowed.keys == [D2.isoformat(), D3.isoformat()]
    assert dict(narrowed.partitions) == {k: w for k, w in plan.partitions.items() if k != START.isoformat()}
    assert narrowed.window == ReadWindow.of(playback, utc(D2), utc(D3) + timedelta(days=1))
    assert plan.keys == [START.isoformat(), D2.isoformat(), D3.isoformat()]  # the plan itself is unchanged


def test_hours_before_the_stream_are_read_but_not_required(playback):
    plan = ReadPlan.for_partitions(playback, [START])
    window = plan.partitions[START.isoformat()]
    assert window.first_hour == plan.stream_first_hour == utc(START) - 2 * HOUR
    assert plan.required_hours(START.isoformat()) == _hours(utc(START), utc(D2, 8))
