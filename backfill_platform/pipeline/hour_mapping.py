"""The exact partition mapping between archive ingestion hours and event days.

Event day D reads the ingestion hours h with

    floor_to_hour(D start - clock_skew - 1 h) <= h < D end + allowed_lateness + 1 h

(`read_window` below, listed by `archive.listing.hours`). `TimeWindowPartitionMapping` can only
shift by whole downstream partitions (days), so it over-approximates that window by up to a day on each
side, and a late file in one hour would make up to two extra days stale. This mapping is exact both ways:
a day maps to exactly the hours it reads, an hour to exactly the days whose windows contain it.

Dagster 1.13 warns (DeprecationWarning) on every custom `PartitionMapping` and leaves it out of the code
location's snapshot: the webserver and daemon-side asset graph infer Dagster's default mapping there (a
day ↔ its own 24 hours). Inside the code location (runs, `evaluate_automation_conditions`, and the
automation sensor, which therefore runs in the user code server) this mapping is the one used.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from dagster import (
    DagsterInvalidDefinitionError,
    PartitionMapping,
    PartitionsDefinition,
    TimeWindow,
    TimeWindowPartitionsDefinition,
    partition_loading_context,
)

from backfill_platform.dagster_internals import (
    AllPartitionsSubset,
    PartitionsSubset,
    TimeWindowPartitionsSubset,
    UpstreamPartitionsResult,
)
from backfill_platform.specs.durations import DAY, HOUR
from backfill_platform.specs.stream import StreamSpec

if TYPE_CHECKING:
    from backfill_platform.dagster_internals import DynamicPartitionsStore

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_HOURLY_CRON = "0 * * * *"
_DAILY_CRON = "0 0 * * *"


def read_before(clock_skew: timedelta) -> timedelta:
    """How long before an event time the ingestion hour holding it may start: the hour's own length, plus
    the clock skew a producer's clock may run ahead of it."""
    return clock_skew + HOUR


def read_after(allowed_lateness: timedelta) -> timedelta:
    """How long after an event time the ingestion hour holding it may end: the allowed lateness, plus the
    hour's own length (a line ingested `allowed_lateness` after its event time sits in an hour that ends
    up to 1 h later)."""
    return allowed_lateness + HOUR


def read_window(spec: StreamSpec, start: datetime, end: datetime) -> tuple[datetime, datetime]:
    """The read window of the event times [start, end): the ingestion instants
    [start - clock_skew - 1h, end + allowed_lateness + 1h) whose hours can hold their lines.

    Its end is also when the window settles: no line for [start, end) can arrive after it. A line of an
    ingestion hour h is admissible (neither too late nor ahead of the skew) exactly when its event time
    t has h + 1h - read_after <= t < h + read_before, so every admissible line lies in its day's window.
    """
    return start - read_before(spec.clock_skew), end + read_after(spec.allowed_lateness)


def _floor(t: datetime, unit: timedelta) -> datetime:
    return _EPOCH + ((t - _EPOCH) // unit) * unit


def _ceil(t: datetime, unit: timedelta) -> datetime:
    floor = _floor(t, unit)
    return floor if floor == t else floor + unit


@dataclass(frozen=True)
class ArchiveReadWindowMapping(PartitionMapping):
    """Event days (daily, UTC) ← the archive ingestion hours (hourly, UTC) each day reads.

    Hours outside the archive's partitions (the future, or before it starts) are left out rather than
    reported as required-but-nonexistent, as the previous `TimeWindowPartitionMapping(...,
    allow_nonexistent_upstream_partitions=True)` did: the latest day may run before its window is over.
    """

    allowed_lateness: timedelta
    clock_skew: timedelta
    allow_nonexistent_upstream_partitions: bool = True
    # The event partitions' length: a day, or an hour for an hourly stream.
    partition_length: timedelta = DAY

    @staticmethod
    def for_stream(spec: StreamSpec) -> ArchiveReadWindowMapping:
        return ArchiveReadWindowMapping(
            allowed_lateness=spec.allowed_lateness,
            clock_skew=spec.clock_skew,
            partition_length=spec.grain.length,
        )

    @property
    def description(self) -> str:
        return (
            "Exact read window: event day D reads the ingestion hours from floor_to_hour(D start - "
            f"clock skew {self.clock_skew} - 1h) up to (excluding) D end + allowed lateness "
            f"{self.allowed_lateness} + 1h; an ingestion hour feeds exactly the days whose window holds it."
        )

    # ---- the window arithmetic (instants, UTC) ----

    def hours_window(self, day_start: datetime, day_end: datetime) -> tuple[datetime, datetime]:
        """[first hour, end of last hour) read by the days [day_start, day_end): `read_window` in whole hours."""
        return (
            _floor(day_start - read_before(self.clock_skew), HOUR),
            _ceil(day_end + read_after(self.allowed_lateness), HOUR),
        )

    def days_window(self, hour_start: datetime, hour_end: datetime) -> tuple[datetime, datetime]:
        """[first start, last end) of the event partitions (days, or hours) whose windows hold an ingestion
        hour of [hour_start, hour_end).

        Partition P (start P0, length L) holds hour h iff floor_hour(P0 - before) <= h < P0 + L + after
        (`read_window`), i.e. for hours in [a, b): a - L - after < P0 < b + before. May be empty.
        """
        length = self.partition_length
        return (
            _floor(hour_start - length - read_after(self.allowed_lateness), length) + length,
            _ceil(hour_end + read_before(self.clock_skew), length),
        )

    # ---- PartitionMapping ----

    def validate_partition_mapping(
        self,
        upstream_partitions_def: PartitionsDefinition,
        downstream_partitions_def: PartitionsDefinition | None,
    ) -> None:
        downstream_cron = _HOURLY_CRON if self.partition_length == HOUR else _DAILY_CRON
        for role, partitions_def, cron in (
            ("upstream", upstream_partitions_def, _HOURLY_CRON),
            ("downstream", downstream_partitions_def, downstream_cron),
        ):
            if not (
                isinstance(partitions_def, TimeWindowPartitionsDefinition)
                and partitions_def.cron_schedule == cron
                and partitions_def.timezone == "UTC"
            ):
                raise DagsterInvalidDefinitionError(
                    f"{type(self).__name__} maps hourly UTC archive partitions to UTC event partitions "
                    f"of {self.partition_length}; the {role} partitions are {partitions_def}"
                )

    def get_upstream_mapped_partitions_result_for_partitions(
        self,
        downstream_partitions_subset: PartitionsSubset | None,
        downstream_partitions_def: PartitionsDefinition | None,
        upstream_partitions_def: PartitionsDefinition,
        current_time: datetime | None = None,
        dynamic_partitions_store: DynamicPartitionsStore | None = None,
    ) -> UpstreamPartitionsResult:
        self.validate_partition_mapping(upstream_partitions_def, downstream_partitions_def)
        assert isinstance(upstream_partitions_def, TimeWindowPartitionsDefinition)
        assert downstream_partitions_subset is not None and downstream_partitions_def is not None
        with partition_loading_context(current_time, dynamic_partitions_store):
            wanted = [
                self.hours_window(start, end)
                for start, end in subset_windows(downstream_partitions_subset, downstream_partitions_def)
            ]
            existing, nonexistent = clip_to_partitions(upstream_partitions_def, wanted)
        return UpstreamPartitionsResult(
            partitions_subset=existing,
            required_but_nonexistent_subset=(
                upstream_partitions_def.empty_subset()
                if self.allow_nonexistent_upstream_partitions
                else nonexistent
            ),
        )

    def get_downstream_partitions_for_partitions(
        self,
        upstream_partitions_subset: PartitionsSubset,
        upstream_partitions_def: PartitionsDefinition,
        downstream_partitions_def: PartitionsDefinition | None,
        current_time: datetime | None = None,
        dynamic_partitions_store: DynamicPartitionsStore | None = None,
    ) -> PartitionsSubset:
        self.validate_partition_mapping(upstream_partitions_def, downstream_partitions_def)
        assert isinstance(downstream_partitions_def, TimeWindowPartitionsDefinition)
        with partition_loading_context(current_time, dynamic_partitions_store):
            wanted = [
                self.days_window(start, end)
                for start, end in subset_windows(upstream_partitions_subset, upstream_partitions_def)
            ]
            existing, _ = clip_to_partitions(downstream_partitions_def, wanted)
        return existing


def subset_windows(
    subset: PartitionsSubset, partitions_def: PartitionsDefinition
) -> list[tuple[datetime, datetime]]:
    """The subset as UTC time windows (contiguous runs where the subset keeps them)."""
    if isinstance(subset, AllPartitionsSubset):
        subset = TimeWindowPartitionsSubset.from_all_partitions_subset(subset)
    if isinstance(subset, TimeWindowPartitionsSubset):
        windows = [(w.start, w.end) for w in subset.included_time_windows]
    else:
        assert isinstance(partitions_def, TimeWindowPartitionsDefinition)
        windows = [
            tuple(partitions_def.time_window_for_partition_key(key)) for key in subset.get_partition_keys()
        ]
    return [(start.astimezone(UTC), end.astimezone(UTC)) for start, end in windows]


def clip_to_partitions(
    partitions_def: TimeWindowPartitionsDefinition, windows: Iterable[tuple[datetime, datetime]]
) -> tuple[PartitionsSubset, PartitionsSubset]:
    """(the existing partitions of the windows, the nonexistent ones) as subsets of partitions_def."""
    existing = nonexistent = partitions_def.empty_subset()
    first, last = partitions_def.get_first_partition_window(), partitions_def.get_last_partition_window()
    low = first.start.astimezone(UTC) if first else None
    high = last.end.astimezone(UTC) if last else None
    for start, end in windows:
        if start >= end:
            continue
        if low is None or high is None:
            nonexistent |= partitions_def.get_partition_subset_in_time_window(TimeWindow(start, end))
            continue
        inside = (max(start, low), min(end, high))
        if inside[0] < inside[1]:
            existing |= partitions_def.get_partition_subset_in_time_window(TimeWindow(*inside))
        for outside in ((start, min(end, low)), (max(start, high), end)):
            if outside[0] < outside[1]:
                nonexistent |= partitions_def.get_partition_subset_in_time_window(TimeWindow(*outside))
    return existing, nonexistent
