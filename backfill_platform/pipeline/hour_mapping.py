"""The exact partition mapping between archive ingestion hours and event days.

Event day D reads the ingestion hours h with

    floor_to_hour(D start - clock_skew - 1 h) <= h < D end + allowed_lateness + 1 h

(`ReadWindow` below, listed by `archive.listing.hours`). `TimeWindowPartitionMapping` can only
shift by whole downstream partitions (days), so it over-approximates that window by up to a day on each
side, and a late file in one hour would make up to two extra days stale. This mapping is exact both ways:
a day maps to exactly the hours it reads, an hour to exactly the days whose windows contain it.

Dagster 1.13 warns (DeprecationWarning) on every custom `PartitionMapping` and leaves it out of the code
location's snapshot: the webserver and daemon-side asset graph infer Dagster's default mapping there (a
day ↔ its own 24 hours). Inside the code location (runs, `evaluate_automation_conditions`, and the
automation sensor, which therefore runs in the user code server) this mapping is the one used.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from types import MappingProxyType

from dagster import DagsterInvalidDefinitionError, PartitionsDefinition, TimeWindowPartitionsDefinition

from backfill_platform.dagster_internals import PartitionsSubset
from backfill_platform.pipeline.window_mapping import WindowMapping
from backfill_platform.specs.durations import DAY, HOUR, midnight
from backfill_platform.specs.stream import StreamSpec

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


@dataclass(frozen=True)
class ReadWindow:
    """What the event times [start, end) read: the ingestion instants [low, high) =
    [start - clock_skew - 1h, end + allowed_lateness + 1h) whose hours can hold their lines.

    `high` is also when the window settles: no line for [start, end) can arrive after it. A line of an
    ingestion hour h is admissible (neither too late nor ahead of the skew) exactly when its event time
    t has h + 1h - read_after <= t < h + read_before, so every admissible line lies in its window.
    """

    start: datetime
    end: datetime
    low: datetime
    high: datetime

    @staticmethod
    def of(spec: StreamSpec, start: datetime, end: datetime) -> ReadWindow:
        """The read window of the event times [start, end) of the stream `spec`."""
        return ReadWindow.within(start, end, read_before(spec.clock_skew), read_after(spec.allowed_lateness))

    @staticmethod
    def within(start: datetime, end: datetime, before: timedelta, after: timedelta) -> ReadWindow:
        """The read window of [start, end) given the margins `read_before` and `read_after` of a stream."""
        return ReadWindow(start, end, start - before, end + after)

    @property
    def first_hour(self) -> datetime:
        """The ingestion hour holding `low`: a listing reads whole hours, so the first one floored."""
        return _floor(self.low, HOUR)

    def hours(self) -> list[datetime]:
        """The ingestion hours the window lists: from `first_hour` up to (excluding) `high`."""
        count = (_ceil(self.high, HOUR) - self.first_hour) // HOUR
        return [self.first_hour + n * HOUR for n in range(max(0, count))]


@dataclass(frozen=True)
class ReadPlan:
    """The read windows of one run: computed once from its partition range and the stream's spec, then
    passed down to each step that lists the archive or judges what it read (ingest, classify, sequence
    numbers, table offsets, completeness, the read record, the partitions before the range).

    `window` is the range's, the union of its partitions' (they are contiguous); `partitions` holds each
    partition's own, by key, in order. `before` and `after` are the stream's margins (`read_before`,
    `read_after`); `stream_start` the start of its first partition, before which no archive hour is due.
    """

    window: ReadWindow
    partitions: Mapping[str, ReadWindow]
    before: timedelta
    after: timedelta
    stream_start: datetime

    @staticmethod
    def for_range(spec: StreamSpec, start: datetime, end: datetime) -> ReadPlan:
        """The plan of the partitions of the stream `spec` that start in [start, end)."""
        return ReadPlan._of(spec, start, end, spec.grain.keys_between(start, end))

    @staticmethod
    def for_partitions(spec: StreamSpec, keys: Sequence[str | date]) -> ReadPlan:
        """The plan of the contiguous partitions `keys` (keys, or dates of a daily stream), in order."""
        grain = spec.grain
        named = [grain.key(grain.start(key)) for key in keys]
        return ReadPlan._of(spec, *grain.bounds(named[0], named[-1]), named)

    @staticmethod
    def _of(spec: StreamSpec, start: datetime, end: datetime, keys: list[str]) -> ReadPlan:
        before, after, grain = read_before(spec.clock_skew), read_after(spec.allowed_lateness), spec.grain
        return ReadPlan(
            window=ReadWindow.within(start, end, before, after),
            partitions=MappingProxyType(
                {key: ReadWindow.within(*grain.bounds(key), before, after) for key in keys}
            ),
            before=before,
            after=after,
            stream_start=midnight(spec.first_partition),
        )

    @property
    def start(self) -> datetime:
        return self.window.start

    @property
    def end(self) -> datetime:
        return self.window.end

    @property
    def keys(self) -> list[str]:
        """The run's partitions, in order."""
        return list(self.partitions)

    def since(self, start: datetime) -> ReadPlan:
        """The plan of this plan's partitions from `start` on (a range narrowed at its start)."""
        kept = {key: window for key, window in self.partitions.items() if window.start >= start}
        return replace(
            self,
            window=ReadWindow.within(start, self.end, self.before, self.after),
            partitions=MappingProxyType(kept),
        )

    def required_hours(self, key: str) -> list[datetime]:
        """The ingestion hours the partition `key` needs: its window's, from the stream's start on (none
        exist before)."""
        return [h for h in self.partitions[key].hours() if h >= self.stream_start]

    @property
    def stream_first_hour(self) -> datetime:
        """The first ingestion hour any window of the stream reads: its first partition's first hour."""
        return _floor(self.stream_start - self.before, HOUR)


def _floor(t: datetime, unit: timedelta) -> datetime:
    return _EPOCH + ((t - _EPOCH) // unit) * unit


def _ceil(t: datetime, unit: timedelta) -> datetime:
    floor = _floor(t, unit)
    return floor if floor == t else floor + unit


@dataclass(frozen=True)
class ArchiveReadWindowMapping(WindowMapping):
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
        """[first hour, end of last hour) read by the days [day_start, day_end): `ReadWindow` in whole hours."""
        return (
            _floor(day_start - read_before(self.clock_skew), HOUR),
            _ceil(day_end + read_after(self.allowed_lateness), HOUR),
        )

    def days_window(self, hour_start: datetime, hour_end: datetime) -> tuple[datetime, datetime]:
        """[first start, last end) of the event partitions (days, or hours) whose windows hold an ingestion
        hour of [hour_start, hour_end).

        Partition P (start P0, length L) holds hour h iff floor_hour(P0 - before) <= h < P0 + L + after
        (`ReadWindow`), i.e. for hours in [a, b): a - L - after < P0 < b + before. May be empty.
        """
        length = self.partition_length
        return (
            _floor(hour_start - length - read_after(self.allowed_lateness), length) + length,
            _ceil(hour_end + read_before(self.clock_skew), length),
        )

    # ---- WindowMapping ----

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

    def upstream_window(
        self, partitions_def: TimeWindowPartitionsDefinition, start: datetime, end: datetime
    ) -> tuple[datetime, datetime]:
        return self.hours_window(start, end)

    def downstream_window(
        self, partitions_def: TimeWindowPartitionsDefinition, start: datetime, end: datetime
    ) -> tuple[datetime, datetime]:
        return self.days_window(start, end)

    def required_but_nonexistent(
        self, upstream_partitions_def: TimeWindowPartitionsDefinition, nonexistent: PartitionsSubset
    ) -> PartitionsSubset:
        return (
            upstream_partitions_def.empty_subset()
            if self.allow_nonexistent_upstream_partitions
            else nonexistent
        )
