"""Promotion: replace production partitions with validated shadow partitions, in one commit.

The shadow is read at one pinned snapshot, gated day by day, written to production with a single
Iceberg `overwrite` (partitions empty in the shadow become empty in production), then production is
compared with that same shadow snapshot bucket by bucket. The commit is fenced: it validates that no
other commit touched those partitions since the promotion looked at production, so a backfill and a
live refresh cannot both promote into the same partitions.

By default a range is all or nothing: one day failing the gate refuses the range. With `per_day=True`
the days that pass are promoted in one commit that replaces exactly those days, and the others are held
back (production keeps what it has for them) and reported: one bad day need not block a month.

The ledger is written after the commit by deriving it from production's history (`reconcile_ledger`),
which also runs first: a promotion that died between its commit and its ledger write is repaired by the
next one.
"""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import reduce
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from backfill_platform.faults import PROMOTION_BEFORE_LEDGER, failpoint
from backfill_platform.lakehouse.snapshots import current_snapshot_id
from backfill_platform.lakehouse.tables import in_range, replace_range, replace_ranges, table_exists
from backfill_platform.pipeline.ledger.commits import (
    ACTION,
    CHECK_DIGEST,
    DATASET,
    DAYS,
    HELD_BACK,
    PROVISIONAL_DAYS,
    RANGE_END,
    RANGE_START,
    SHADOW_SNAPSHOT,
    VALIDATION_RUNS,
    VERSION,
    day_list,
    encode_validation_runs,
)
from backfill_platform.pipeline.ledger.reconcile import reconcile_ledger
from backfill_platform.pipeline.names import production_table, shadow_table
from backfill_platform.pipeline.promotion.gate import PromotionRefused, gate_partitions, refusal
from backfill_platform.pipeline.shadow.inputs import current_inputs
from backfill_platform.pipeline.tables.dataset_tables import (
    ensure_dataset_table,
    partition_ranges,
    read_range,
)
from backfill_platform.pipeline.validation.buckets import Bucket
from backfill_platform.pipeline.validation.fingerprints import fingerprints_from_buckets
from backfill_platform.pipeline.validation.promotion_verdicts import compare_buckets
from backfill_platform.pipeline.validation.snapshot_figures import table_figures
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.stream import StreamSpec


@dataclass
class Promotion:
    """What one promotion published (`partitions`: their keys, days or hours of the dataset's grain), what
    it held back and why, and how production compares."""

    dataset: str
    version: str
    start: date | datetime
    end: date | datetime
    snapshot_id: int | None
    previous_snapshot_id: int | None
    shadow_snapshot_id: int | None
    rows: int
    # (partition, bucket) → difference between production and the shadow after the commit; promoted only.
    mismatched_buckets: dict[Bucket, str] = field(default_factory=dict)
    partitions: list[str] = field(default_factory=list)
    held_back: dict[str, str] = field(default_factory=dict)  # partition key -> why
    rows_by_partition: dict[str, int] = field(default_factory=dict)
    provisional_partitions: list[str] = field(default_factory=list)

    @property
    def verified(self) -> bool:
        return not self.mismatched_buckets

    def partition_verified(self, partition: str) -> bool:
        """Production equals the shadow in every bucket of this promoted partition."""
        return partition in self.partitions and not any(p == partition for p, _ in self.mismatched_buckets)


def promote(
    spark: SparkSession,
    spec: DatasetSpec,
    sources: Sequence[StreamSpec],
    start: date | datetime,
    end: date | datetime,
    properties: dict[str, str] | None = None,
    per_day: bool = False,
) -> Promotion:
    """Promote [start, end) of the active version's shadow to production in one fenced commit: days
    (dates, or instants), or hours of an hourly dataset (instants on hour boundaries).

    All or nothing unless `per_day`: then only the partitions passing the gate are replaced, the others
    are returned in `held_back`; PromotionRefused (production untouched) when no partition passes.
    """
    interval = (spec.grain.start(start), spec.grain.start(end))  # days (the dataset's) or instants
    reconcile_ledger(spark, spec)
    version = spec.active_version
    source = shadow_table(spark, spec, version)
    if not table_exists(spark, source):
        raise PromotionRefused(f"refusing to promote {spec.name}: shadow {version} was never materialized")
    shadow_snapshot = current_snapshot_id(spark, source)
    shadow = read_range(spark, source, spec, *interval, shadow_snapshot)
    keys = spec.grain.keys_between(*interval)
    # At that snapshot: usually already computed by this run's shadow step (snapshot_figures).
    shadow_figures = table_figures(spark, source, spec, *interval, shadow_snapshot)
    decision = gate_partitions(
        spark,
        spec,
        version,
        fingerprints_from_buckets(shadow_figures, keys),
        keys,
        current_inputs(spark, spec, sources, keys),
    )
    validations, held_back = decision.promotable, decision.held_back
    if held_back and (not per_day or not validations):
        raise refusal(spec, version, held_back)
    promoted = sorted(validations)
    promoted_ranges = partition_ranges(spec, promoted)
    if held_back:
        shadow = shadow.where(
            reduce(operator.or_, (in_range(spec.partition_column, a, b) for a, b in promoted_ranges))
        )

    target = production_table(spark, spec)
    ensure_dataset_table(spark, spec, target)
    previous = current_snapshot_id(spark, target)
    provisional = [d for d in promoted if validations[d].get("provisional")]
    snapshot_properties = _snapshot_properties(
        spec, shadow_snapshot, validations, held_back, provisional, interval, properties
    )
    with refuse_on_conflict(spec.name, start, end):
        snapshot = _commit(
            shadow,
            target,
            spec,
            interval,
            (promoted_ranges, len(promoted)) if held_back else None,
            snapshot_properties,
            previous,
        )
    failpoint(PROMOTION_BEFORE_LEDGER)
    reconcile_ledger(spark, spec)

    published = table_figures(spark, target, spec, *interval, snapshot)
    rows_by_partition = {p: int(validations[p]["shadow_rows"]) for p in promoted}
    return Promotion(
        dataset=spec.name,
        version=version,
        start=start,
        end=end,
        snapshot_id=snapshot,
        previous_snapshot_id=previous,
        shadow_snapshot_id=shadow_snapshot,
        rows=sum(rows_by_partition.values()),
        mismatched_buckets=compare_buckets(
            {b: f for b, f in shadow_figures.items() if b[0] in promoted},
            {b: f for b, f in published.items() if b[0] in promoted},
        ),
        partitions=promoted,
        held_back=dict(sorted(held_back.items())),
        rows_by_partition=rows_by_partition,
        provisional_partitions=provisional,
    )


def _snapshot_properties(
    spec: DatasetSpec,
    shadow_snapshot: int,
    validations: dict[str, dict],
    held_back: dict[str, str],
    provisional: list[str],
    interval: tuple[datetime, datetime],
    properties: dict[str, str] | None,
) -> dict[str, Any]:
    """What the production commit records: the run's properties, the range, the days it replaced and the
    validations they came from (the ledger is derived from these), and the days held back."""
    promoted = sorted(validations)
    digests = sorted({v["check_digest"] for v in validations.values()})
    return {
        **(properties or {}),
        ACTION: "promote",
        DATASET: spec.name,
        VERSION: spec.active_version,
        SHADOW_SNAPSHOT: shadow_snapshot,
        CHECK_DIGEST: hashlib.sha256(",".join(digests).encode()).hexdigest()[:16],
        # Promoted before their lateness horizon passed; promoted again once settled.
        PROVISIONAL_DAYS: day_list(provisional),
        RANGE_START: spec.grain.key(interval[0]),
        RANGE_END: spec.grain.key(interval[1]),
        DAYS: day_list(promoted),
        VALIDATION_RUNS: encode_validation_runs({d: validations[d]["run_id"] for d in promoted}),
        HELD_BACK: day_list(list(held_back)),
    }


def _commit(
    shadow: DataFrame,
    target: str,
    spec: DatasetSpec,
    interval: tuple[datetime, datetime],
    only: tuple[list, int] | None,
    snapshot_properties: dict[str, Any],
    previous: int | None,
) -> int:
    """Replace the range (or `only` its (ranges, partition count) that passed) in production with the
    shadow's rows, in one commit fenced on production's snapshot `previous`; the new snapshot's id."""
    if only is not None:
        return replace_ranges(
            shadow,
            target,
            spec.partition_column,
            *only,
            snapshot_properties,
            options=fence_options(previous),
        )
    return replace_range(
        shadow,
        target,
        spec.partition_column,
        *spec.partition_bounds(*interval),
        snapshot_properties,
        options=fence_options(previous),
    )


@contextmanager
def refuse_on_conflict(dataset: str, start: date | datetime, end: date | datetime) -> Iterator[None]:
    """Turn Iceberg's refusal of a fenced commit into a PromotionRefused that says what happened."""
    try:
        yield
    except Exception as exc:
        if "ValidationException" not in str(exc) and "CommitFailedException" not in str(exc):
            raise
        raise PromotionRefused(
            f"refusing to promote {dataset} [{start}, {end}): another commit changed those partitions "
            "while this promotion was running (a concurrent backfill or refresh); production keeps that "
            "commit. Re-run the promotion to publish on top of it."
        ) from exc


def fence_options(previous_snapshot: int | None) -> dict[str, str]:
    """Fail the commit if anything was committed to the range after `previous_snapshot` (serializable)."""
    if previous_snapshot is None:
        return {"isolation-level": "serializable"}
    return {"validate-from-snapshot-id": str(previous_snapshot), "isolation-level": "serializable"}
