"""Promotion: replace a range of production partitions with validated shadow partitions, in one commit.

The shadow is read at one pinned snapshot, gated, written to production with a single Iceberg
`overwrite` (partitions empty in the shadow become empty in production), then production is compared
with that same shadow snapshot bucket by bucket. The commit is fenced: it validates that no other
commit touched the range since the promotion looked at production, so a backfill and a live refresh
cannot both promote into the same partitions.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import date, timedelta

from pyspark.sql import SparkSession

from backfill_platform.lakehouse.tables import current_snapshot_id, replace_range, table_exists
from backfill_platform.ledger.ledger import now, update_rows
from backfill_platform.promotion.gate import PromotionRefused, check_gate
from backfill_platform.shadow.tables import ensure_dataset_table, production_table, read_range, shadow_table
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.validation.buckets import Bucket, actual_figures

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


def days_between(start: date, end: date) -> list[date]:
    return [start + timedelta(days=i) for i in range((end - start).days)]


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
        },
    )
    return promotion


def fence_options(previous_snapshot: int | None) -> dict[str, str]:
    """Fail the commit if anything was committed to the range after `previous_snapshot` (serializable)."""
    if previous_snapshot is None:
        return {"isolation-level": "serializable"}
    return {"validate-from-snapshot-id": str(previous_snapshot), "isolation-level": "serializable"}


def compare_buckets(expected: dict, actual: dict) -> dict[Bucket, str]:
    """Buckets whose counts, sums or hash sums differ between two tables."""
    problems = {}
    for bucket in sorted(set(expected) | set(actual)):
        a, b = expected.get(bucket), actual.get(bucket)
        if a is None or b is None:
            problems[bucket] = "missing in " + ("shadow" if a is None else "production")
        elif (a.rows, a.sums, a.key_hash, a.row_hash) != (b.rows, b.sums, b.key_hash, b.row_hash):
            problems[bucket] = f"rows {b.rows} vs {a.rows}, row hash {b.row_hash} vs {a.row_hash}"
    return problems
