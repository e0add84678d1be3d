"""Partition grains: UTC hours, UTC days and the days of a time zone, their keys and bounds; and the
snapshot properties that list them (a year of hours is one range, not 8,760 keys)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from backfill_platform.pipeline.ledger.commits import (
    VALIDATION_RUNS,
    VALIDATION_RUNS_BY_DAY,
    day_list,
    encode_validation_runs,
    parse_day_list,
    validation_runs,
)
from backfill_platform.specs.grain import DAILY, HOURLY, Grain

NEW_YORK, BERLIN = Grain("day", "America/New_York"), Grain("day", "Europe/Berlin")
# (grain, day, its first UTC instant, its hours): the 2026 DST changes of both zones, and an ordinary day.
DAYS = [
    (NEW_YORK, "2026-03-08", datetime(2026, 3, 8, 5, tzinfo=UTC), 23),
    (NEW_YORK, "2026-11-01", datetime(2026, 11, 1, 4, tzinfo=UTC), 25),
    (NEW_YORK, "2026-11-02", datetime(2026, 11, 2, 5, tzinfo=UTC), 24),
    (BERLIN, "2026-03-29", datetime(2026, 3, 28, 23, tzinfo=UTC), 23),
    (BERLIN, "2026-10-25", datetime(2026, 10, 24, 22, tzinfo=UTC), 25),
    (DAILY, "2026-11-01", datetime(2026, 11, 1, tzinfo=UTC), 24),
]


@pytest.mark.parametrize(("grain", "day", "start", "hours"), DAYS)
def test_a_day_of_a_zone_runs_from_local_midnight_to_local_midnight(grain, day, start, hours):
    begins, ends = grain.bounds(day)
    assert begins == start and ends - begins == timedelta(hours=hours)
    assert grain.key(begins) == day and grain.key(ends - timedelta(microseconds=1)) == day
    assert grain.key(ends) == grain.shift(day, 1) and grain.shift(grain.shift(day, 1), -1) == day
    assert (
        grain.floor(begins + timedelta(hours=hours - 1)) == begins
        and grain.ceil(begins + timedelta(hours=1)) == ends
    )
    assert grain.keys_between(begins, ends) == [day]


def test_hours_are_utc_hours_with_dagsters_keys():
    start = datetime(2026, 10, 2, 18, 10, tzinfo=UTC)
    assert HOURLY.key(start) == "2026-10-02-18:00" and HOURLY.floor(start) == start.replace(minute=0)
    assert HOURLY.bounds("2026-10-02-18:00", "2026-10-02-19:00") == (
        datetime(2026, 10, 2, 18, tzinfo=UTC),
        datetime(2026, 10, 2, 20, tzinfo=UTC),
    )
    assert HOURLY.keys_between(start, datetime(2026, 10, 2, 20, tzinfo=UTC)) == ["2026-10-02-19:00"]
    assert HOURLY.shift("2026-10-01-00:00", -1) == "2026-09-30-23:00"
    assert Grain.of_key("2026-10-01-00:00") == HOURLY and Grain.of_key("2026-10-01") == DAILY
    with pytest.raises(ValueError, match="UTC hours"):
        Grain("hour", "Europe/Berlin")
    with pytest.raises(ValueError, match="not a hour partition key"):
        HOURLY.start("2026-10-01")


def test_a_year_of_hours_is_one_range_in_a_snapshots_properties():
    first = datetime(2026, 1, 1, tzinfo=UTC)
    year = HOURLY.keys_between(first, first + timedelta(days=365))
    assert len(year) == 8760
    listed = day_list(year)
    assert listed == "2026-01-01-00:00..2026-12-31-23:00" and parse_day_list(listed) == year
    # Two days stay two keys (as every promotion before ranges wrote them); three are a range.
    assert day_list(["2026-10-03", "2026-10-01"]) == "2026-10-01,2026-10-03"
    assert (
        day_list(["2026-10-01", "2026-10-02", "2026-10-03", "2026-10-05"])
        == "2026-10-01..2026-10-03,2026-10-05"
    )
    runs = {**dict.fromkeys(year[:10], "run-a"), year[20]: "run-b"}
    encoded = encode_validation_runs(runs)
    assert len(encoded) < 100 and validation_runs({VALIDATION_RUNS: encoded}) == runs
    # A promotion recorded before ranges: {day: run} under the old property.
    assert validation_runs({VALIDATION_RUNS_BY_DAY: '{"2026-10-01":"r"}'}) == {"2026-10-01": "r"}
    assert validation_runs({}) is None


def test_a_stream_is_partitioned_in_utc_and_says_where_local_days_go():
    from backfill_platform.components.registry import demo_spec_data
    from backfill_platform.specs.stream import StreamSpec

    data = demo_spec_data("playback_hourly")
    assert StreamSpec.model_validate({**data, "partition_timezone": "UTC"}).grain == HOURLY
    with pytest.raises(ValueError) as error:
        StreamSpec.model_validate({**data, "partition_timezone": "America/New_York"})
    message = str(error.value)
    assert "partition_timezone" in message and "a stream's partitions are UTC days or hours" in message
    assert "on a daily dataset over this stream" in message
