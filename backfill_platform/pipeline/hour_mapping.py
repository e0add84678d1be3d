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

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from dagster import DagsterInvalidDefinitionError, PartitionsDefinition, TimeWindowPartitionsDefinition

from backfill_platform.dagster_internals import PartitionsSubset
from backfill_platform.pipeline.window_mapping import WindowMapping
from backfill_platform.specs.durations import DAY, HOUR
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
