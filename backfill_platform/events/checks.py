"""Blocking checks of the events asset: reconciliation, quarantine ratio, schema.

Each check reads the tables back rather than trusting the figures the ingestion computed, and carries
its numbers per partition as metadata.
"""

from __future__ import annotations

from datetime import datetime

from dagster import AssetCheckResult, AssetCheckSeverity, AssetKey, MetadataValue
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from backfill_platform.events.ingest import IngestResult, events_columns, quarantine_table
from backfill_platform.lakehouse.tables import in_range
from backfill_platform.specs.stream import StreamSpec
from backfill_platform.validation.markdown import markdown_table
from backfill_platform.validation.schema import pandera_schema, validate_schema

RECONCILIATION = "reconciliation"
QUARANTINE_RATIO = "quarantine_ratio"
SCHEMA = "schema"
RECORDS_PRESENT = "records_present"
# Metadata key under which a check lists the partitions it failed.
DAYS_FAILED_KEY = "failed_partitions"


def _counts_by_day(
    spark: SparkSession, table: str, column: str, start: datetime, end: datetime
) -> dict[str, int]:
    rows = (
        spark.table(table)
        .where(in_range(column, start, end))
        .groupBy(F.to_date(column).alias("day"))
        .count()
        .collect()
    )
    return {row["day"].isoformat(): row["count"] for row in rows}


def reconciliation_check(
    spark: SparkSession,
    spec: StreamSpec,
    key: AssetKey,
    result: IngestResult,
    written: dict[str, int],
    start: datetime,
    end: datetime,
) -> AssetCheckResult:
    """records read = rows in the events table + duplicates removed + rows in quarantine, per partition.

    `written` is the events rows per day as read back from the table the run committed.
    """
    quarantined = _counts_by_day(spark, quarantine_table(spark, spec), "attributed_time", start, end)
    rows, broken = [], []
    for day, figures in sorted(result.partitions.items()):
        in_events, in_quarantine = written.get(day, 0), quarantined.get(day, 0)
        balance = figures.records - in_events - figures.duplicates - in_quarantine
        rows.append([day, figures.records, in_events, figures.duplicates, in_quarantine, balance])
        if balance:
            broken.append(day)
    return AssetCheckResult(
        asset_key=key,
        check_name=RECONCILIATION,
        passed=not broken,
        severity=AssetCheckSeverity.ERROR,
        description="records read = written + duplicates + quarantined, per partition (read back)",
        metadata={
            "partitions_checked": len(rows),
            DAYS_FAILED_KEY: MetadataValue.json(broken),
            "records": sum(r[1] for r in rows),
            "written": sum(r[2] for r in rows),
            "by_partition": MetadataValue.md(
                markdown_table(
                    ["partition", "read", "written", "duplicates", "quarantined", "unaccounted"], rows
                )
            ),
        },
    )


def quarantine_ratio_check(spec: StreamSpec, key: AssetKey, result: IngestResult) -> AssetCheckResult:
    rows, over = [], []
    for day, figures in sorted(result.partitions.items()):
        ratio = figures.quarantined_total / figures.records if figures.records else 0.0
        rows.append([day, figures.records, figures.quarantined_total, f"{ratio:.4%}"])
        if ratio > spec.max_quarantine_ratio:
            over.append(day)
    worst = max(
        (p.quarantined_total / p.records for p in result.partitions.values() if p.records), default=0.0
    )
    return AssetCheckResult(
        asset_key=key,
        check_name=QUARANTINE_RATIO,
        passed=not over,
        severity=AssetCheckSeverity.ERROR,
        description=f"quarantined / read <= {spec.max_quarantine_ratio:.2%} in every partition",
        metadata={
            "max_ratio": MetadataValue.float(worst),
            "bound": MetadataValue.float(spec.max_quarantine_ratio),
            DAYS_FAILED_KEY: MetadataValue.json(over),
            "by_partition": MetadataValue.md(
                markdown_table(["partition", "read", "quarantined", "ratio"], rows)
            ),
        },
    )


def records_present_check(spec: StreamSpec, key: AssetKey, result: IngestResult) -> AssetCheckResult:
    """A day with no archive records at all is a missing or expired archive, not a quiet day.

    Left unchecked it would validate trivially downstream (0 rows expected, 0 found) and a promotion
    would empty production. Streams that can have empty days say so with `allow_empty_partitions`.
    """
    empty = sorted(day for day, figures in result.partitions.items() if figures.records == 0)
    failing = [] if spec.allow_empty_partitions else empty
    return AssetCheckResult(
        asset_key=key,
        check_name=RECORDS_PRESENT,
        passed=not failing,
        severity=AssetCheckSeverity.ERROR,
        description="every day has archive records (unless the spec allows empty days)",
        metadata={
            "empty_partitions": MetadataValue.json(empty),
            DAYS_FAILED_KEY: MetadataValue.json(failing),
        },
    )


def schema_check(spec: StreamSpec, key: AssetKey, df: DataFrame) -> AssetCheckResult:
    """The written events (`df`) match the latest schema; id, time and ingestion metadata are never null."""
    required = {
        "event_id",
        "event_time",
        "_schema_version",
        "_source_file",
        "_line_number",
        "_ingestion_time",
    }
    outcome = validate_schema(df, pandera_schema(spec.events_table, events_columns(spec), required))
    return AssetCheckResult(
        asset_key=key,
        check_name=SCHEMA,
        passed=outcome.passed,
        severity=AssetCheckSeverity.ERROR,
        metadata={
            "errors": MetadataValue.json(outcome.errors),
            "null_violations": MetadataValue.json(outcome.null_violations),
        },
    )
