"""The platform's own partition mappings (`pipeline/window_mapping.py` and its two window arithmetics), in
the code location: an event day maps to exactly the archive hours it reads and an hour to exactly the days
whose read windows hold it (`ArchiveReadWindowMapping`); a dataset partition maps to exactly the source
partitions its interval (with its lookback) overlaps, across time zones too (`SourceWindowMapping`,
`LocalDaysMapping`); partitions outside the other side's range are left out, or reported as required but
nonexistent where the mapping says so."""

from __future__ import annotations

import warnings
from datetime import timedelta

import pytest
from dagster import DailyPartitionsDefinition, HourlyPartitionsDefinition

from backfill_platform.pipeline.hour_mapping import ArchiveReadWindowMapping
from backfill_platform.pipeline.source_window_mapping import LocalDaysMapping, SourceWindowMapping

HOURS = HourlyPartitionsDefinition(start_date="2026-09-30-00:00", end_date="2026-10-10-00:00")
DAYS = DailyPartitionsDefinition(start_date="2026-10-01", end_date="2026-10-09")
NEW_YORK_DAYS = DailyPartitionsDefinition(
    start_date="2026-10-30", end_date="2026-11-03", timezone="America/New_York"
)
UTC_HOURS = HourlyPartitionsDefinition(start_date="2026-10-29-00:00", end_date="2026-11-05-00:00")
READ_WINDOW = ArchiveReadWindowMapping(allowed_lateness=timedelta(hours=8), clock_skew=timedelta(minutes=15))


@pytest.fixture(autouse=True)
def _quiet() -> None:
    # Dagster warns on every custom mapping (it leaves them out of the snapshot, as the modules say).
    warnings.filterwarnings("ignore", category=DeprecationWarning)


def _hours(first: str, last: str) -> list[str]:
    keys = HOURS.get_partition_keys()
    return keys[keys.index(first) : keys.index(last) + 1]


def test_a_day_reads_exactly_its_window_of_hours() -> None:
    # 2026-10-03 reads from floor(00:00 - 15 min - 1 h) = 10-02 22:00 to before 10-04 00:00 + 8 h + 1 h.
    result = READ_WINDOW.get_upstream_mapped_partitions_result_for_partitions(
        DAYS.empty_subset().with_partition_keys(["2026-10-03"]), DAYS, HOURS
    )
    assert sorted(result.partitions_subset.get_partition_keys()) == _hours(
        "2026-10-02-22:00", "2026-10-04-08:00"
    )
    assert len(result.partitions_subset.get_partition_keys()) == 2 + 24 + 9
    assert list(result.required_but_nonexistent_subset.get_partition_keys()) == []


def test_an_hour_feeds_exactly_the_days_whose_windows_hold_it() -> None:
    def days_of(hour: str) -> list[str]:
        subset = HOURS.empty_subset().with_partition_keys([hour])
        return sorted(
            READ_WINDOW.get_downstream_partitions_for_partitions(subset, HOURS, DAYS).get_partition_keys()
        )

    assert days_of("2026-10-05-13:00") == ["2026-10-05"]
    assert days_of("2026-10-05-05:00") == ["2026-10-04", "2026-10-05"]  # 10-04's window ends 10-05 09:00
    assert days_of("2026-10-05-22:00") == ["2026-10-05", "2026-10-06"]  # 10-06's starts 10-05 22:45's hour


def test_hours_before_the_archive_are_left_out_or_reported_as_the_mapping_says() -> None:
    first_day = DAYS.empty_subset().with_partition_keys(["2026-10-01"])
    early = DailyPartitionsDefinition(start_date="2026-09-30", end_date="2026-10-09")
    strict = ArchiveReadWindowMapping(
        timedelta(hours=8), timedelta(minutes=15), allow_nonexistent_upstream_partitions=False
    )
    late_hours = HourlyPartitionsDefinition(start_date="2026-10-01-00:00", end_date="2026-10-10-00:00")
    lenient = READ_WINDOW.get_upstream_mapped_partitions_result_for_partitions(first_day, early, late_hours)
    reported = strict.get_upstream_mapped_partitions_result_for_partitions(first_day, early, late_hours)
    assert min(lenient.partitions_subset.get_partition_keys()) == "2026-10-01-00:00"
    assert list(lenient.required_but_nonexistent_subset.get_partition_keys()) == []
    assert sorted(reported.required_but_nonexistent_subset.get_partition_keys()) == [
        "2026-09-30-22:00",
        "2026-09-30-23:00",
    ]


def test_a_dataset_day_reads_the_source_days_its_lookback_reaches_and_feeds_them_back() -> None:
    mapping = SourceWindowMapping(lookback=timedelta(days=1))
    day = DAYS.empty_subset().with_partition_keys(["2026-10-04"])
    upstream = mapping.get_upstream_mapped_partitions_result_for_partitions(day, DAYS, DAYS)
    assert sorted(upstream.partitions_subset.get_partition_keys()) == ["2026-10-03", "2026-10-04"]
    source_day = DAYS.empty_subset().with_partition_keys(["2026-10-04"])
    downstream = mapping.get_downstream_partitions_for_partitions(source_day, DAYS, DAYS)
    assert sorted(downstream.get_partition_keys()) == ["2026-10-04", "2026-10-05"]
    first = mapping.get_upstream_mapped_partitions_result_for_partitions(
        DAYS.empty_subset().with_partition_keys(["2026-10-01"]), DAYS, DAYS
    )
    assert sorted(first.partitions_subset.get_partition_keys()) == ["2026-10-01"]  # 09-30 does not exist


def test_a_local_day_reads_its_own_utc_hours_25_on_the_day_summer_time_ends() -> None:
    mapping = LocalDaysMapping()

    def hours_of(day: str) -> list[str]:
        subset = NEW_YORK_DAYS.empty_subset().with_partition_keys([day])
        result = mapping.get_upstream_mapped_partitions_result_for_partitions(
            subset, NEW_YORK_DAYS, UTC_HOURS
        )
        return sorted(result.partitions_subset.get_partition_keys())

    ends = hours_of("2026-11-01")
    assert len(ends) == 25
    assert (ends[0], ends[-1]) == ("2026-11-01-04:00", "2026-11-02-04:00")
    assert len(hours_of("2026-10-31")) == 24
    feeds = mapping.get_downstream_partitions_for_partitions(
        UTC_HOURS.empty_subset().with_partition_keys(["2026-11-01-03:00"]), UTC_HOURS, NEW_YORK_DAYS
    )
    assert list(feeds.get_partition_keys()) == ["2026-10-31"]  # 23:00 in New York, still summer time
