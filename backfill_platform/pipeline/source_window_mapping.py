"""The partition mapping of a source whose partitions are not the dataset's: hours under days, UTC under
local days.

Dataset partition P (a day, UTC or local, or an hour) reads the source's events whose event time lies in
[P start - lookback, P end) (`shadow.inputs.read_interval`): it depends on exactly the source partitions
(UTC hours or days) that overlap that interval, and a source partition feeds exactly the dataset
partitions whose intervals it overlaps. A New York day of 25 hours (the day summer time ends) depends on
its 25 UTC hours; a UTC day on its 24.

Dagster's `TimeWindowPartitionMapping` maps hours to days of the same time zone, and refuses two zones
("Timezones … don't match"). Dagster's webserver and daemon do not run the code location's code: they see a
mapping only through the code location's snapshot, which holds Dagster's built-in mapping classes alone
and otherwise infers `TimeWindowPartitionMapping`. Within one zone (UTC hours under UTC days) that is this
same mapping without the lookback. Across zones it raises wherever the host side walks the edge: the
backfill daemon walks every child of every asset an asset backfill targets (an hourly stream's events
reach its local-day dataset even when that dataset is not targeted), and the webserver maps every parent
before launching one. So a mapping across zones is `LocalDaysMapping`: exact here, and seen there as
`AllPartitionMapping` (every source partition feeds every local day), which never raises and errs on the
safe side: an asset backfill that targets both the source and local days runs the days after all of its
source partitions (not only theirs), and a failed source partition holds back all of its local days.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from dagster import (
    AllPartitionMapping,
    DagsterInvalidDefinitionError,
    PartitionsDefinition,
    TimeWindowPartitionsDefinition,
)

from backfill_platform.dagster_internals import serialize_as_builtin
from backfill_platform.pipeline.delegating_mapping import DelegatingMapping
from backfill_platform.pipeline.window_mapping import WindowMapping


@dataclass(frozen=True)
class SourceWindowMapping(WindowMapping):
    """Dataset partition P ← the source partitions overlapping [P start - lookback, P end)."""

    lookback: timedelta = timedelta(0)

    @property
    def description(self) -> str:
        reach = f"from {self.lookback} before its start " if self.lookback else ""
        return (
            f"Event-time window: a dataset partition reads the source partitions its interval {reach}"
            "overlaps (UTC hours of a local day, by the zone's rules); exact in the code location."
        )

    def validate_partition_mapping(
        self,
        upstream_partitions_def: PartitionsDefinition,
        downstream_partitions_def: PartitionsDefinition | None,
    ) -> None:
        for role, partitions_def in (
            ("upstream", upstream_partitions_def),
            ("downstream", downstream_partitions_def),
        ):
            if not isinstance(partitions_def, TimeWindowPartitionsDefinition):
                raise DagsterInvalidDefinitionError(
                    f"{type(self).__name__} maps time-window partitions; the {role} partitions are {partitions_def}"
                )

    def upstream_window(
        self, partitions_def: TimeWindowPartitionsDefinition, start: datetime, end: datetime
    ) -> tuple[datetime, datetime]:
        # Source partitions before the source's first (a lookback from the first day) do not exist: left out.
        return covering(partitions_def, start - self.lookback, end)

    def downstream_window(
        self, partitions_def: TimeWindowPartitionsDefinition, start: datetime, end: datetime
    ) -> tuple[datetime, datetime]:
        # P overlaps [a, b) through its lookback when P start - lookback < b and P end > a.
        return covering(partitions_def, start, end + self.lookback)


class LocalDaysMapping(DelegatingMapping, AllPartitionMapping):
    """Local days ← the UTC source partitions (hours, or days) their intervals overlap: `SourceWindowMapping`
    in the code location (runs, the daily refresh), `AllPartitionMapping` in Dagster's webserver and daemon.

    Only a subclass of a built-in mapping is carried in the code location's snapshot; this one is written
    there under its base class's name (`serialize_as_builtin`), so the host side reads an
    `AllPartitionMapping` and never compares the two zones. Every method of the protocol is the exact
    mapping's (`DelegatingMapping`): none of `AllPartitionMapping`'s behaviour is used in the code location.
    """

    exact: SourceWindowMapping

    def __new__(cls, lookback: timedelta = timedelta(0)) -> LocalDaysMapping:
        mapping = super().__new__(cls)
        mapping.exact = SourceWindowMapping(lookback)
        return mapping

    @property
    def delegate(self) -> SourceWindowMapping:
        return self.exact

    @property
    def lookback(self) -> timedelta:
        return self.exact.lookback

    # A NamedTuple without fields: every instance would compare equal to every other one (and to
    # `AllPartitionMapping()`); the lookback tells them apart.
    def __eq__(self, other: object) -> bool:
        return isinstance(other, LocalDaysMapping) and other.exact == self.exact

    def __hash__(self) -> int:
        return hash((type(self), self.exact))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(lookback={self.lookback!r})"

    @property
    def description(self) -> str:
        return (
            f"{self.exact.description} Dagster's webserver and daemon, which cannot map across time zones, "
            "see every source partition feeding every local day."
        )


serialize_as_builtin(LocalDaysMapping, AllPartitionMapping)


def covering(
    partitions_def: TimeWindowPartitionsDefinition, start: datetime, end: datetime
) -> tuple[datetime, datetime]:
    """[start of the partition holding `start`, end of the one holding the instant before `end`): the
    partitions of `partitions_def` that overlap [start, end), as one aligned window (empty if end <= start)."""
    if end <= start:
        return start, start
    first = partitions_def.get_partition_key_for_timestamp(start.timestamp())
    last = partitions_def.get_partition_key_for_timestamp(end.timestamp(), end_closed=True)
    low = partitions_def.time_window_for_partition_key(first).start
    high = partitions_def.time_window_for_partition_key(last).end
    return low.astimezone(UTC), high.astimezone(UTC)
