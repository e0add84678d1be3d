"""The partition mappings the platform computes itself: a window of instants mapped to a window of instants.

`ArchiveReadWindowMapping` (event partitions ← the archive hours they read) and `SourceWindowMapping`
(dataset partitions ← the source partitions their intervals overlap) differ only in their window arithmetic.
`WindowMapping` answers Dagster's `PartitionMapping` protocol for both: each contiguous run of the given
partitions becomes a window of instants (UTC), the mapping widens it (`upstream_window`,
`downstream_window`), and the result is the other side's partitions inside it, those outside the other
side's first and last partitions left out (or, upstream, reported as required but nonexistent where the
mapping says so).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from dagster import (
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

if TYPE_CHECKING:
    from backfill_platform.dagster_internals import DynamicPartitionsStore


class WindowMapping(PartitionMapping):
    """A `PartitionMapping` between time-window partitions given by its window arithmetic (subclasses:
    `upstream_window`, `downstream_window`, `validate_partition_mapping`)."""

    def upstream_window(
        self, partitions_def: TimeWindowPartitionsDefinition, start: datetime, end: datetime
    ) -> tuple[datetime, datetime]:
        """The instants of the upstream partitions (of `partitions_def`) that downstream [start, end) reads."""
        raise NotImplementedError

    def downstream_window(
        self, partitions_def: TimeWindowPartitionsDefinition, start: datetime, end: datetime
    ) -> tuple[datetime, datetime]:
        """The instants of the downstream partitions (of `partitions_def`) that upstream [start, end) feeds."""
        raise NotImplementedError

    def required_but_nonexistent(
        self, upstream_partitions_def: TimeWindowPartitionsDefinition, nonexistent: PartitionsSubset
    ) -> PartitionsSubset:
        """What Dagster is told is required but does not exist, of the upstream partitions outside the
        upstream's first and last (`nonexistent`): by default none (they are left out)."""
        return upstream_partitions_def.empty_subset()

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
                self.upstream_window(upstream_partitions_def, start, end)
                for start, end in subset_windows(downstream_partitions_subset, downstream_partitions_def)
            ]
            existing, nonexistent = clip_to_partitions(upstream_partitions_def, wanted)
        return UpstreamPartitionsResult(
            partitions_subset=existing,
            required_but_nonexistent_subset=self.required_but_nonexistent(
                upstream_partitions_def, nonexistent
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
                self.downstream_window(downstream_partitions_def, start, end)
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
