"""A partition mapping that answers Dagster's protocol with another mapping's answers.

Two of the platform's mappings are a built-in or an exact mapping under another name: `LookbackMapping`
(Dagster's `TimeWindowPartitionMapping` with an offset, under a class the snapshot leaves out) and
`LocalDaysMapping` (the exact `SourceWindowMapping`, under a class the snapshot writes as
`AllPartitionMapping`). The class decides what Dagster's webserver and daemon see; `delegate` decides what
the code location computes.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from dagster import PartitionMapping, PartitionsDefinition

from backfill_platform.dagster_internals import PartitionsSubset, UpstreamPartitionsResult

if TYPE_CHECKING:
    from backfill_platform.dagster_internals import DynamicPartitionsStore


class DelegatingMapping:
    """Mixin: the `PartitionMapping` protocol answered by `self.delegate` (put it first among the bases)."""

    @property
    def delegate(self) -> PartitionMapping:
        raise NotImplementedError

    def validate_partition_mapping(
        self,
        upstream_partitions_def: PartitionsDefinition,
        downstream_partitions_def: PartitionsDefinition | None,
    ) -> None:
        self.delegate.validate_partition_mapping(upstream_partitions_def, downstream_partitions_def)

    def get_upstream_mapped_partitions_result_for_partitions(
        self,
        downstream_partitions_subset: PartitionsSubset | None,
        downstream_partitions_def: PartitionsDefinition | None,
        upstream_partitions_def: PartitionsDefinition,
        current_time: datetime | None = None,
        dynamic_partitions_store: DynamicPartitionsStore | None = None,
    ) -> UpstreamPartitionsResult:
        return self.delegate.get_upstream_mapped_partitions_result_for_partitions(
            downstream_partitions_subset,
            downstream_partitions_def,
            upstream_partitions_def,
            current_time,
            dynamic_partitions_store,
        )

    def get_downstream_partitions_for_partitions(
        self,
        upstream_partitions_subset: PartitionsSubset,
        upstream_partitions_def: PartitionsDefinition,
        downstream_partitions_def: PartitionsDefinition | None,
        current_time: datetime | None = None,
        dynamic_partitions_store: DynamicPartitionsStore | None = None,
    ) -> PartitionsSubset:
        return self.delegate.get_downstream_partitions_for_partitions(
            upstream_partitions_subset,
            upstream_partitions_def,
            downstream_partitions_def,
            current_time,
            dynamic_partitions_store,
        )
