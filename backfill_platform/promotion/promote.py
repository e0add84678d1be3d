"""Promotion: replace a range of production partitions with validated shadow partitions, in one commit.

The shadow is read at one pinned snapshot, gated, written to production with a single Iceberg
`overwrite` (partitions empty in the shadow become empty in production), then production is compared
with that same shadow snapshot bucket by bucket. The commit is fenced: it validates that no other
commit touched the range since the promotion looked at production, so a backfill and a live refresh
cannot both promote into the same partitions.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date

from pyspark.sql import SparkSession

from backfill_platform.lakehouse.tables import current_snapshot_id, replace_range, table_exists
from backfill_platform.ledger.ledger import now, update_rows
from backfill_platform.partitions import days_between
from backfill_platform.promotion.gate import PromotionRefused, check_gate
from backfill_platform.shadow.tables import ensure_dataset_table, production_table, read_range, shadow_table
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.validation.buckets import Bucket, BucketFigures, actual_figures, failing_buckets

ACTION = "backfill_platform.action"
RANGE_START = "backfill_platform.range-start"
RANGE_END = "backfill_platform.range-end"


@dataclass
class Promotion:
    dataset: str
    version: str
    start: date
    end: date
    snapshot_id: int | None
    previous_snapshot_id: int | None
    shadow_snapshot_id: int | None
    rows: int
    mismatched_buckets: dict[Bucket, str] = field(default_factory=dict)

    @property
    def verified(self) -> bool:
        return not self.mismatched_buckets


def promote(
    spark: SparkSession, spec: DatasetSpec, start: date, end: date, properties: dict[str, str] | None = None
) -> Promotion:
    version = spec.active_version
    source = shadow_table(spark, spec, version)
    if not table_exists(spark, source):
        raise PromotionRefused(f"refusing to promote {spec.name}: shadow {version} was never materialized")
    shadow_snapshot = current_snapshot_id(spark, source)
    shadow = read_range(spark, source, spec, start, end, shadow_snapshot)
    days = days_between(start, end)
    validations = check_gate(spark, spec, version, shadow, days)

    target = production_table(spark, spec)
    ensure_dataset_table(spark, spec, target)
    previous = current_snapshot_id(spark, target)
    digests = sorted({v["check_digest"] for v in validations.values()})
    with refuse_on_conflict(spec.name, start, end):
        snapshot = replace_range(
            shadow,
            target,
            spec.partition_column,
            start,
            end,
            properties={
                **(properties or {}),
                ACTION: "promote",
                "backfill_platform.dataset": spec.name,
                "backfill_platform.dataset-version": version,
                "backfill_platform.shadow-snapshot-id": shadow_snapshot,
                "backfill_platform.check-digest": hashlib.sha256(",".join(digests).encode()).hexdigest()[:16],
                RANGE_START: start.isoformat(),
                RANGE_END: end.isoformat(),
            },
            options=fence_options(previous),
        )
    promotion = Promotion(
        dataset=spec.name,
        version=version,
        start=start,
        end=end,
        snapshot_id=snapshot,
        previous_snapshot_id=previous,
        shadow_snapshot_id=shadow_snapshot,
        rows=shadow.count(),
        mismatched_buckets=compare_buckets(
            actual_figures(shadow, spec),
            actual_figures(read_range(spark, target, spec, start, end, snapshot), spec),
        ),
    )
    update_rows(
        spark,
        spec.name,
        [(version, date.fromisoformat(day), record["run_id"]) for day, record in validations.items()],
        {
            "promoted_snapshot_id": snapshot,
            "promoted_at": now(),
            "promotion_run_id": (properties or {}).get("dagster.run-id"),
            # Promoted again after a revert: the row describes the live promotion now.
            "reverted_snapshot_id": None,
            "reverted_at": None,
        },
    )
    return promotion


@contextmanager
def refuse_on_conflict(dataset: str, start: date, end: date) -> Iterator[None]:
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


def compare_buckets(
    shadow: dict[Bucket, BucketFigures], production: dict[Bucket, BucketFigures]
) -> dict[Bucket, str]:
    """Buckets whose counts, sums or hash sums differ between the shadow and production."""

    def differs(want: BucketFigures, got: BucketFigures) -> str | None:
        if (want.rows, want.sums, want.key_hash, want.row_hash) == (
            got.rows,
            got.sums,
            got.key_hash,
            got.row_hash,
        ):
            return None
        return f"rows {got.rows} vs {want.rows}, row hash {got.row_hash} vs {want.row_hash}"

    return failing_buckets(shadow, production, differs)[1]
