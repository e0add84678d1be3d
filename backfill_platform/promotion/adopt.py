"""Adopt existing production data: the one recorded way data enters production without the checks.

Teams arrive with a table their old pipeline already wrote. `adopt` copies a range of it into the
production table in one commit whose snapshot properties say so, and marks those partitions in the
ledger as adopted and unvalidated. It never overwrites a production partition that already has data.
"""

from __future__ import annotations

from datetime import date

from pyspark.sql import SparkSession

from backfill_platform.lakehouse.tables import current_snapshot_id, in_range, replace_range
from backfill_platform.ledger.ledger import LedgerRow, append, now
from backfill_platform.partitions import days_between
from backfill_platform.promotion.promote import ACTION, RANGE_END, RANGE_START, fence_options
from backfill_platform.shadow.tables import conform, ensure_dataset_table, production_table, read_range
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.validation.buckets import partition_fingerprints


class AdoptRefused(RuntimeError):
    """Adoption would overwrite production data; nothing was written."""


def adopt(
    spark: SparkSession,
    spec: DatasetSpec,
    source_table: str,
    start: date,
    end: date,
    reason: str,
    by: str = "cli",
) -> int | None:
    """Register [start, end) of `source_table` as production; return the production snapshot id."""
    target = production_table(spark, spec)
    ensure_dataset_table(spark, spec, target)
    head = current_snapshot_id(spark, target)
    occupied = sorted(
        r[0].isoformat()
        for r in read_range(spark, target, spec, start, end, head)
        .select(spec.partition_column)
        .distinct()
        .collect()
    )
    if occupied:
        raise AdoptRefused(
            f"production {spec.name} already has data for {occupied}; adopt never overwrites it"
        )
    source = conform(
        spark.table(source_table).where(in_range(spec.partition_column, start, end)), spec, "adopted"
    )
    # Replacing the (empty) range, fenced at `head`: data committed there meanwhile makes this fail.
    snapshot = replace_range(
        source,
        target,
        spec.partition_column,
        start,
        end,
        properties={
            ACTION: "adopt",
            "backfill_platform.dataset": spec.name,
            "backfill_platform.adopted-from": source_table,
            "backfill_platform.validated": "false",
            "reason": reason,
            RANGE_START: start.isoformat(),
            RANGE_END: end.isoformat(),
        },
        options=fence_options(head),
    )
    days = days_between(start, end)
    fingerprints = partition_fingerprints(read_range(spark, target, spec, start, end, snapshot), spec, days)
    recorded = now()
    append(
        spark,
        [
            LedgerRow(
                dataset=spec.name,
                version="adopted",
                partition=day,
                run_id=f"adopt-{snapshot}",
                recorded_at=recorded,
                stream=spec.source_stream,
                reason=reason,
                shadow_rows=fingerprints[day.isoformat()][0],
                shadow_row_hash=fingerprints[day.isoformat()][1],
                checks_passed=None,
                adopted=True,
                promoted_snapshot_id=snapshot,
                promoted_at=recorded,
                promotion_run_id=by,
            )
            for day in days
        ],
        LedgerRow,
    )
    return snapshot
