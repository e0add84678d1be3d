"""Adopt existing production data: the one recorded way data enters production without the checks.

Teams arrive with a table their old pipeline already wrote. `adopt` copies a range of it into the
production table in one commit whose snapshot properties say so, and marks those partitions in the
ledger as adopted and unvalidated. It never overwrites a production partition that already has data.
"""

from __future__ import annotations

import re
from datetime import date

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from backfill_platform.lakehouse.snapshots import current_snapshot_id
from backfill_platform.lakehouse.tables import in_range, replace_range
from backfill_platform.pipeline.ledger.commits import (
    ACTION,
    ADOPTED_BY,
    ADOPTED_FROM,
    DATASET,
    DAYS,
    RANGE_END,
    RANGE_START,
    VALIDATED,
    day_list,
)
from backfill_platform.pipeline.ledger.ledger import ledger
from backfill_platform.pipeline.ledger.reconcile import ADOPTED, reconcile_ledger
from backfill_platform.pipeline.names import production_table
from backfill_platform.pipeline.partitions import days_between
from backfill_platform.pipeline.promotion.promote import fence_options
from backfill_platform.pipeline.run_tags import REASON
from backfill_platform.pipeline.tables.dataset_tables import conform, ensure_dataset_table, read_range
from backfill_platform.specs.dataset import DatasetSpec


class AdoptRefused(RuntimeError):
    """Adoption would overwrite production data; nothing was written."""


# A table to adopt: `namespace.table` or `catalog.namespace.table`, plain identifiers (no quoting, no SQL).
_SOURCE_TABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}(\.[A-Za-z_][A-Za-z0-9_]{0,127}){1,2}")


def check_source_name(source_table: str) -> str:
    """Refuse a source that is not a plain table name (before Spark is even started)."""
    if not _SOURCE_TABLE.fullmatch(source_table):
        raise AdoptRefused(
            f"--from {source_table!r} is not a table name: `namespace.table` or `catalog.namespace.table`, "
            "letters, digits and '_' only"
        )
    return source_table


def check_source_table(spark: SparkSession, source_table: str) -> None:
    """Refuse, before anything is written, a source that is not a plain table name or names no table."""
    check_source_name(source_table)
    # A two-part name is asked of the platform's catalog (the session's default): Spark would otherwise ask
    # its built-in session catalog first, which creates ./spark-warehouse in the working directory.
    qualified = (
        source_table if source_table.count(".") == 2 else f"{spark.catalog.currentCatalog()}.{source_table}"
    )
    if not spark.catalog.tableExists(qualified):
        raise AdoptRefused(f"--from {source_table!r}: no such table in the catalog")


def adopt(
    spark: SparkSession,
    spec: DatasetSpec,
    source_table: str,
    start: date,
    end: date,
    reason: str,
    by: str = "cli",
) -> int | None:
    """Register [start, end) of `source_table` as production; return the production snapshot id.

    The ledger rows (version `adopted`, run `adopt-<snapshot>`) are derived from the commit by
    `reconcile_ledger`, so an adoption that dies right after its commit is recorded by the next run.
    """
    if spec.grain.unit != "day":
        raise AdoptRefused(
            f"{spec.name} is partitioned by {spec.grain.unit}: adopting a table is for daily datasets"
        )
    check_source_table(spark, source_table)
    reconcile_ledger(spark, spec)
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
            DATASET: spec.name,
            ADOPTED_FROM: source_table,
            VALIDATED: "false",
            ADOPTED_BY: by,
            REASON: reason,
            RANGE_START: start.isoformat(),
            RANGE_END: end.isoformat(),
            DAYS: day_list(days_between(start, end)),
        },
        options=fence_options(head),
    )
    reconcile_ledger(spark, spec)
    return snapshot


def adopted_rows_by_partition(spark: SparkSession, spec: DatasetSpec, snapshot_id: int) -> dict[str, int]:
    """Rows per day an adoption brought into production, as its ledger rows record them."""
    rows = (
        ledger(spark, spec.name)
        .where((F.col("version") == ADOPTED) & (F.col("run_id") == f"adopt-{snapshot_id}"))
        .select("partition_date", "shadow_rows")
        .collect()
    )
    return {r["partition_date"].isoformat(): int(r["shadow_rows"]) for r in sorted(rows)}
