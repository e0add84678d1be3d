"""Ledger tables in the `platform` namespace.

`platform.ingestions` has one row per stream, event-time day and events run: archive files, records
read, events written, duplicates, quarantined, late. `platform.ledger` has one row per dataset, version,
day and shadow run: the ingestion figures it was computed from, the shadow rows and checksum, the check
verdicts, and the production snapshot that published it (or reverted it), derived from production's
commit history by `ledger.reconcile` rather than written beside it.
Together they prove nothing was lost or doubled, and reports read from them.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import asdict, dataclass, fields
from datetime import UTC, date, datetime
from types import UnionType
from typing import Any, Union, get_args, get_origin, get_type_hints

from dagster import AssetExecutionContext
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from backfill_platform.lakehouse.snapshots import top_level_columns
from backfill_platform.lakehouse.tables import PLATFORM_NAMESPACE, ensure_table, table_id
from backfill_platform.pipeline.ledger.latest import latest_key
from backfill_platform.pipeline.run_tags import BACKFILL_TAG, REASON_TAG
from backfill_platform.pipeline.validation.fingerprints import Fingerprint
from backfill_platform.pipeline.validation.partition_inputs import JudgedInputs
from backfill_platform.pipeline.validation.shadow_validation import ShadowValidation
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.grain import value_key


@dataclass
class IngestionRow:
    stream: str
    partition_date: date
    run_id: str
    recorded_at: datetime
    archive_files: int
    records: int
    written: int
    duplicates: int
    conflicting_ids: int
    quarantined: int
    late: int
    events_snapshot_id: int | None
    checks_passed: bool
    failed_checks: str | None
    events_rows: int | None = None
    events_row_hash: str | None = None
    # Validated before the day's lateness horizon passed (the spec allows provisional promotion).
    provisional: bool | None = None
    # Wall time of the whole events run that recorded this day (every day of a range run carries the
    # same value): with the run's records, the throughput `backfill-platform plan` estimates from.
    run_seconds: float | None = None
    # The Dagster partition key (`2026-10-01`, or `2026-10-01-14:00` for an hour); `partition_date` is the
    # date it names (`partition_date()`). Null in rows recorded before hours: their key is that date.
    partition_key: str | None = None
    # Records of subjects with an erasure request, and the requests' snapshot the run honored (null in rows
    # recorded before erasure, and when no request was ever filed).
    erased: int | None = None
    erasure_snapshot_id: int | None = None


@dataclass
class LedgerRow:
    dataset: str
    version: str
    partition_date: date
    run_id: str
    recorded_at: datetime
    stream: str
    backfill_id: str | None = None
    reason: str | None = None
    archive_files: int | None = None
    records: int | None = None
    events_written: int | None = None
    duplicates: int | None = None
    quarantined: int | None = None
    late: int | None = None
    shadow_snapshot_id: int | None = None
    shadow_rows: int | None = None
    shadow_row_hash: str | None = None
    checks_passed: bool | None = None
    failed_checks: str | None = None
    check_digest: str | None = None
    diverging_rows: int | None = None
    # The events the validation judged (rows, hash sum): promotion refuses once the events differ.
    events_rows: int | None = None
    events_row_hash: str | None = None
    provisional: bool | None = None
    adopted: bool = False
    # Every source the dataset reads (comma-separated; `stream` is the first) and what the day read from
    # each (`stream=rows/hash_sum;…`, `validation.partition_inputs.PartitionInputs`): the gate names a changed source.
    sources: str | None = None
    inputs: str | None = None
    promoted_snapshot_id: int | None = None
    promoted_at: datetime | None = None
    erased: int | None = None  # as in `IngestionRow`
    promotion_run_id: str | None = None
    reverted_snapshot_id: int | None = None
    reverted_at: datetime | None = None
    partition_key: str | None = None  # as in `IngestionRow`
    # The source partitions the partition read, counted per source (`playback_hourly=25` for the New York
    # day summer time ends; lookback partitions included): `JudgedInputs.input_partitions`. Null in rows
    # recorded before it, and in adoptions (nothing was read).
    input_partitions: str | None = None


# Python type of a row field -> Spark SQL type of its column (Iceberg: long, double, string, boolean,
# timestamptz, date). A field of any other type is an error, not a guess.
SPARK_TYPES: dict[type, str] = {
    int: "bigint",
    float: "double",
    str: "string",
    bool: "boolean",
    datetime: "timestamp",
    date: "date",
}


def row_columns(row_type: type) -> list[tuple[str, str]]:
    """(name, Spark SQL type) of a row dataclass's fields, in field order, from its type hints."""
    hints = get_type_hints(row_type)
    return [(f.name, _spark_type(row_type, f.name, hints[f.name])) for f in fields(row_type)]


def _spark_type(row_type: type, name: str, hint: Any) -> str:
    # `int | None`: every column is nullable, so an optional field has its base type's column.
    union = get_origin(hint) in (Union, UnionType)
    base = [arg for arg in get_args(hint) if arg is not type(None)] if union else [hint]
    if len(base) != 1 or base[0] not in SPARK_TYPES:
        raise TypeError(f"{row_type.__name__}.{name}: no column type for {hint!r} (see SPARK_TYPES)")
    return SPARK_TYPES[base[0]]


def ddl(row_type: type) -> str:
    """Spark DDL of a row dataclass, in field order."""
    return ", ".join(f"{name} {kind}" for name, kind in row_columns(row_type))


# The tables' names in the platform namespace, for Spark (here) and PyIceberg (`operations.ledger_view`).
INGESTIONS_TABLE = "ingestions"
LEDGER_TABLE = "ledger"
# Columns of both tables renamed since they were first written, {old: new}: `ensure_ledger` renames them
# once in place; `operations.ledger_view` reads a table not yet renamed under the new names.
# `partition` held the date a partition key names, not the partition (that is `partition_key`).
RENAMED_COLUMNS = {"partition": "partition_date"}


def ingestions_table(spark: SparkSession) -> str:
    return table_id(spark, PLATFORM_NAMESPACE, INGESTIONS_TABLE)


def ledger_table(spark: SparkSession) -> str:
    return table_id(spark, PLATFORM_NAMESPACE, LEDGER_TABLE)


def ensure_ledger(spark: SparkSession) -> None:
    """Create the ledger tables, or bring older ones up to the columns this version of the platform records.

    Columns are only ever added or renamed (Iceberg schema evolution, `lakehouse.tables.ensure_table` as
    for every table): added ones read null in older rows, renamed ones (`RENAMED_COLUMNS`, renamed once
    in place, metadata only) keep every row's value. When both tables exist with every column (the usual
    case) this is two metadata reads in the driver, not DDL statements and table scans' planning.
    """
    tables = ((ingestions_table(spark), IngestionRow), (ledger_table(spark), LedgerRow))
    if all(_complete(spark, identifier, row_type) for identifier, row_type in tables):
        return
    for identifier, row_type in tables:
        # Rows are keyed: MERGEs of different rows need not conflict with concurrent appends.
        ensure_table(
            spark,
            identifier,
            row_columns(row_type),
            properties={"write.merge.isolation-level": "snapshot"},
            renamed=RENAMED_COLUMNS,
        )


def _complete(spark: SparkSession, identifier: str, row_type: type) -> bool:
    """The table exists, has a column for every field of `row_type` and none of the names renamed since."""
    try:
        present = top_level_columns(spark, identifier)
    except AnalysisException:  # no such table (or namespace): created by the caller
        return False
    return all(f.name in present for f in fields(row_type)) and not present & RENAMED_COLUMNS.keys()


def append(spark: SparkSession, rows: list, row_type: type) -> None:
    if not rows:
        return
    ensure_ledger(spark)
    target = ingestions_table(spark) if row_type is IngestionRow else ledger_table(spark)
    df = spark.createDataFrame([tuple(asdict(r).values()) for r in rows], ddl(row_type))
    df.writeTo(target).append()


def recorded_now() -> datetime:
    """When a row is recorded: the real clock, never the settable `settings.now` (which tests and the bench
    move to put a run after a day settles). `latest.LATEST_ORDER` orders a day's rows by it, so it must
    follow the order in which runs really recorded them."""
    return datetime.now(UTC)


def partition_date(key: str | date) -> date:
    """The ledger's `partition_date` of a partition key: the date it names, a day's own date (a time
    zone's day for a local-day dataset), an hour's UTC day."""
    return key if isinstance(key, date) else date.fromisoformat(key[:10])


def key_of_row(record: dict) -> str:
    """A ledger row's partition key (rows from before hours have only their date)."""
    return record.get("partition_key") or record["partition_date"].isoformat()


def _latest_per_day(df: DataFrame, keys: list[str]) -> dict[str, dict]:
    """Each partition's latest row (`latest.latest_key`), by partition key. A partition has one row per
    run that covered it (a handful), so the rows are collected and picked here: one scan, no shuffle for
    a window."""
    wanted = {value_key(key) for key in keys}  # a day may be given as a date
    dates = sorted({partition_date(key) for key in wanted})
    latest: dict[str, dict] = {}
    for row in df.where(F.col("partition_date").isin(dates)).collect():
        record = row.asDict()
        day = key_of_row(record)
        if day not in wanted:
            continue
        if day not in latest or latest_key(record) > latest_key(latest[day]):
            latest[day] = record
    return latest


def latest_ingestions(spark: SparkSession, stream: str, days: list[str] | list[date]) -> dict[str, dict]:
    """The most recent ingestion figures (and check verdicts) of each partition (by its key)."""
    ensure_ledger(spark)
    return _latest_per_day(spark.table(ingestions_table(spark)).where(F.col("stream") == stream), days)


def latest_shadow_rows(
    spark: SparkSession, dataset: str, version: str, days: list[str] | list[date]
) -> dict[str, dict]:
    """The most recent validation of each partition of a dataset version (what promotion is gated on)."""
    ensure_ledger(spark)
    rows = spark.table(ledger_table(spark)).where(
        (F.col("dataset") == dataset) & (F.col("version") == version) & ~F.col("adopted")
    )
    return _latest_per_day(rows, days)


def ledger(spark: SparkSession, dataset: str | None = None) -> DataFrame:
    ensure_ledger(spark)
    df = spark.table(ledger_table(spark))
    return df.where(F.col("dataset") == dataset) if dataset else df


def record_ingestions(
    spark: SparkSession,
    spec,
    result,
    run_id: str,
    failed: dict[str, list[str]],
    fingerprints: dict[str, Fingerprint],
    provisional: Collection[str] = (),
) -> None:
    """One `platform.ingestions` row per event-time day of an events run: figures, verdicts, and the
    fingerprint of the events those verdicts are about."""
    recorded = recorded_now()
    append(
        spark,
        [
            IngestionRow(
                stream=spec.name,
                partition_date=partition_date(day),
                partition_key=day,
                run_id=run_id,
                recorded_at=recorded,
                archive_files=f.archive_files,
                records=f.records,
                written=f.written,
                duplicates=f.duplicates,
                conflicting_ids=f.conflicting_ids,
                quarantined=f.quarantined_total,
                late=f.late,
                events_snapshot_id=result.events_snapshot_id,
                checks_passed=not failed.get(day),
                failed_checks=",".join(failed.get(day, [])) or None,
                **fingerprints[day].columns("events"),
                provisional=day in provisional,
                run_seconds=result.seconds,
                erased=f.erased,
                erasure_snapshot_id=result.erasure.snapshot_id,
            )
            for day, f in sorted(result.partitions.items())
        ],
        IngestionRow,
    )


def record_validation(
    spark,
    context: AssetExecutionContext,
    spec: DatasetSpec,
    version: str,
    snapshot: int | None,
    validation: ShadowValidation,
    fingerprints: dict[str, Fingerprint],
    judged: JudgedInputs,
) -> None:
    """One ledger row per partition: the ingestions and the exact events it came from (every source),
    what the shadow holds, the verdicts."""
    recorded = recorded_now()
    # Computed once for the range: each walks every verdict of every day.
    failed, check_digest = validation.failed, validation.digest
    rows = []
    for day in validation.days:
        ingestion = judged.own_days_ingestion(day)
        rows.append(
            LedgerRow(
                dataset=spec.name,
                version=version,
                partition_date=partition_date(day),
                partition_key=day,
                run_id=context.run.run_id,
                recorded_at=recorded,
                stream=spec.primary_stream,
                backfill_id=context.run.tags.get(BACKFILL_TAG),
                reason=context.run.tags.get(REASON_TAG),
                archive_files=ingestion.get("archive_files"),
                records=ingestion.get("records"),
                events_written=ingestion.get("written"),
                duplicates=ingestion.get("duplicates"),
                quarantined=ingestion.get("quarantined"),
                late=ingestion.get("late"),
                erased=ingestion.get("erased"),
                shadow_snapshot_id=snapshot,
                **fingerprints[day].columns("shadow"),
                checks_passed=day not in failed,
                failed_checks=",".join(failed.get(day, [])) or None,
                check_digest=check_digest,
                diverging_rows=validation.divergence.partitions[day].diverging,
                **judged.inputs[day].total.columns("events"),
                provisional=bool(ingestion.get("provisional")),
                sources=",".join(spec.stream_names),
                inputs=judged.inputs[day].text(),
                input_partitions=judged.input_partitions(day),
            )
        )
    append(spark, rows, LedgerRow)
