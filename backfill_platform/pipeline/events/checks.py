"""The events' checks, one verdict per day: reconciliation, quarantine ratio, schema, records present,
settled.

A check module: reconciliation reads the tables back rather than trusting the figures the ingestion
computed, then judges the balance (`reconciliation_verdicts`); the schema check runs pandera
(`validation.schema`). The other verdicts are pure, over the events stage's own figures (`IngestResult`,
`PartitionCompleteness`), so they sit here beside those types rather than in `pipeline/validation/`, which the
layers keep below the stages. Each verdict carries that day's numbers as metadata.
"""

from __future__ import annotations

from datetime import datetime

from dagster import MetadataValue
from pyspark.sql import DataFrame, SparkSession

from backfill_platform.lakehouse.tables import in_range
from backfill_platform.pipeline.events.completeness import PartitionCompleteness, format_hours
from backfill_platform.pipeline.events.ingest import IngestResult, events_columns
from backfill_platform.pipeline.names import quarantine_table
from backfill_platform.pipeline.partitions import partition_of
from backfill_platform.pipeline.validation.schema import SCHEMA, schema_verdicts
from backfill_platform.pipeline.validation.verdicts import PartitionVerdict
from backfill_platform.specs.grain import Grain, value_key
from backfill_platform.specs.stream import StreamSpec

RECONCILIATION = "reconciliation"
QUARANTINE_RATIO = "quarantine_ratio"
RECORDS_PRESENT = "records_present"
SETTLED = "settled"
CHECK_DESCRIPTIONS = {
    RECONCILIATION: (
        "records read = events written + duplicates + quarantined (read back) + erased (records of subjects "
        "with an erasure request), per day"
    ),
    QUARANTINE_RATIO: "quarantined / read within the spec's ratio, or at most its per-day count, per day",
    SCHEMA: "pandera model of the events: types, and id, time and ingestion metadata never null",
    RECORDS_PRESENT: "the day has archive records (unless the spec allows empty days)",
    SETTLED: (
        "the day's lateness horizon passed and no ingestion hour of its read window is missing (or, where "
        "Kafka offsets or producers' sequence numbers prove it, none of those is)"
    ),
}


def _counts_by_partition(
    spark: SparkSession, table: str, column: str, grain: Grain, start: datetime, end: datetime
) -> dict[str, int]:
    rows = (
        spark.table(table)
        .where(in_range(column, start, end))
        .groupBy(partition_of(grain, column).alias("day"))
        .count()
        .collect()
    )
    return {value_key(row["day"]): row["count"] for row in rows}


def reconciliation_check(
    spark: SparkSession,
    spec: StreamSpec,
    result: IngestResult,
    written: dict[str, int],
    start: datetime,
    end: datetime,
) -> list[PartitionVerdict]:
    """records read = rows in the events table + duplicates removed + rows in quarantine + erased, per day.

    `written` is the events rows per day as read back from the table the run committed; the quarantine's
    are read back here.
    """
    quarantined = _counts_by_partition(
        spark, quarantine_table(spark, spec), "attributed_time", spec.grain, start, end
    )
    return reconciliation_verdicts(result, written, quarantined)


def reconciliation_verdicts(
    result: IngestResult, written: dict[str, int], quarantined: dict[str, int]
) -> list[PartitionVerdict]:
    """Each day's balance of what the run read against what the tables hold (`written` events rows and
    `quarantined` rows per day, read back): zero, or the records unaccounted for."""
    verdicts = []
    for day, figures in sorted(result.partitions.items()):
        in_events, in_quarantine = written.get(day, 0), quarantined.get(day, 0)
        balance = figures.records - in_events - figures.duplicates - in_quarantine - figures.erased
        metadata = {
            "read": figures.records,
            "written": in_events,
            "duplicates": figures.duplicates,
            "quarantined": in_quarantine,
            "erased": figures.erased,
            "erasure_requests_snapshot": str(result.erasure.snapshot_id or "none"),
            "unaccounted": balance,
        }
        verdicts.append(PartitionVerdict(RECONCILIATION, day, balance == 0, metadata))
    return verdicts


def quarantine_ratio_check(spec: StreamSpec, result: IngestResult) -> list[PartitionVerdict]:
    """Quarantined / read within `max_quarantine_ratio`, or at most `max_quarantined_per_day` records.

    Either bound passes a day: a ratio alone blocks a 96-record day on one truncated line (1.04%), a
    count alone lets a million-record day lose thousands.
    """
    verdicts = []
    for day, figures in sorted(result.partitions.items()):
        quarantined = figures.quarantined_total
        ratio = quarantined / figures.records if figures.records else 0.0
        within_ratio = ratio <= spec.max_quarantine_ratio
        within_floor = quarantined <= spec.max_quarantined_per_day
        metadata = {
            "read": figures.records,
            "quarantined": quarantined,
            "ratio": MetadataValue.float(ratio),
            "bound": MetadataValue.float(spec.max_quarantine_ratio),
            "max_quarantined_per_day": spec.max_quarantined_per_day,
            "passed_by": "ratio" if within_ratio else "max_quarantined_per_day" if within_floor else "none",
            **{f"quarantined_{reason}": n for reason, n in figures.quarantined.items() if n},
            # Where to look first: the day's earliest record of each reason, with its detail and line.
            **{f"sample_{reason}": MetadataValue.text(text) for reason, text in figures.samples.items()},
        }
        verdicts.append(PartitionVerdict(QUARANTINE_RATIO, day, within_ratio or within_floor, metadata))
    return verdicts


def records_present_check(spec: StreamSpec, result: IngestResult) -> list[PartitionVerdict]:
    """A day with no archive records at all is a missing or expired archive, not a quiet day.

    Left unchecked it would validate trivially downstream (0 rows expected, 0 found) and a promotion
    would empty production. Streams that can have empty days say so with `allow_empty_partitions`.
    """
    return [
        PartitionVerdict(
            RECORDS_PRESENT,
            day,
            figures.records > 0 or spec.allow_empty_partitions,
            {"read": figures.records, "archive_files": figures.archive_files},
        )
        for day, figures in sorted(result.partitions.items())
    ]


def settled_check(spec: StreamSpec, days: dict[str, PartitionCompleteness]) -> list[PartitionVerdict]:
    """Every day's lateness horizon has passed and its read window has every ingestion hour.

    An unsettled day would validate against itself and publish an undercount as validated. With the
    spec's `provisional_promotion`, a day whose horizon is still ahead (and with no hole so far) passes
    as provisional; it is recorded as such and validated again once settled.
    """
    verdicts = []
    for day, status in sorted(days.items()):
        provisional = (
            not status.settled and spec.provisional_promotion and not status.missing_hours and not status.gaps
        )
        metadata = {
            "settles_at": status.horizon.strftime("%Y-%m-%d %H:%M UTC"),
            "provisional": provisional,
            "missing_hours": MetadataValue.text(format_hours(status.missing_hours) or "none"),
            "gaps": MetadataValue.text("; ".join(status.gaps) or "none"),
            "hours_still_to_come": len(status.pending_hours),
            "problem": MetadataValue.text(status.problem() or "none"),
            "proof": MetadataValue.text(status.proof),
        }
        verdicts.append(PartitionVerdict(SETTLED, day, status.settled or provisional, metadata))
    return verdicts


REQUIRED_COLUMNS = (
    "event_id",
    "event_time",
    "_schema_version",
    "_source_file",
    "_line_number",
    "_ingestion_time",
)


def events_schema_check(
    spec: StreamSpec, df: DataFrame, days: list[str], null_counts: dict[str, int] | None = None
) -> list[PartitionVerdict]:
    """The written events (`df`) match the latest schema; id, time and ingestion metadata are never null.
    `null_counts` (rows where each required column is null) may come from a pass the caller runs anyway."""
    return schema_verdicts(
        spec.events_table, events_columns(spec), set(REQUIRED_COLUMNS), df, days, null_counts
    )
