"""Iceberg table helpers: identifiers, creation, one-commit range replacement, snapshots, pinned reads.

Every write of a time range goes through `replace_range` (or `replace_ranges` for several): one
Iceberg `overwrite` commit that deletes exactly the rows of the range and adds the new ones, so
partitions that became empty are emptied too and re-running the same range is idempotent.
"""

from __future__ import annotations

import operator
import uuid
from collections.abc import Collection, Mapping, Sequence
from datetime import date, datetime, timedelta
from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from backfill_platform.lakehouse import snapshots
from backfill_platform.lakehouse.refusals import explain_refusal, refusal_reason
from backfill_platform.lakehouse.schema import evolve_table, rename_columns
from backfill_platform.specs.common import check_catalog_name, check_identifier

# The namespaces the platform writes: named where a spec's archive table is refused them.
from backfill_platform.specs.isolation import (  # noqa: F401 (re-exported)
    PLATFORM_NAMESPACE,
    PROD_NAMESPACE,
    RAW_NAMESPACE,
    SHADOW_NAMESPACE,
)

# Snapshot property that identifies the commit of one write, so its snapshot id can be found for sure.
WRITE_ID = "backfill_platform.write-id"
# Properties of every table the platform creates (a table may add its own).
TABLE_PROPERTIES = {"format-version": "2", "write.parquet.compression-codec": "zstd"}
# Prefix of the error a row outside a write's range raises in the write's tasks (see `_only`).
_REFUSAL_MARKER = "backfill_platform refused: "


def table_id(spark: SparkSession, namespace: str, name: str) -> str:
    """Fully qualified identifier `<catalog>.<namespace>.<name>`; both parts are checked identifiers."""
    catalog = check_catalog_name(spark.conf.get("spark.sql.defaultCatalog"))
    return f"{catalog}.{check_identifier(namespace)}.{check_identifier(name)}"


def ensure_table(
    spark: SparkSession,
    identifier: str,
    columns: Sequence[tuple[str, str]],
    partitioned_by: str | None = None,
    properties: Mapping[str, str] | None = None,
    renamed: Mapping[str, str] | None = None,
) -> None:
    """Create the table with `(name, Spark SQL type)` columns, or add those an existing one lacks.

    The one way every table is created and evolved: data tables (partitioned) and the ledger tables.
    A spec that gained a field must not fail the write (Spark refuses extra columns) nor lose the field:
    see `schema.evolve_table`, which also refuses a changed column type with a clear error, and lets
    concurrent runs add the same columns. `renamed` ({old: new}) renames the columns of an existing
    table first (`schema.rename_columns`): added as new, `new` would read null in every older row.
    """
    namespace = identifier.rsplit(".", 1)[0]
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {namespace}")
    ddl = ", ".join(f"{name} {kind}" for name, kind in columns)
    partitioning = f"PARTITIONED BY ({partitioned_by}) " if partitioned_by else ""
    settings = {**TABLE_PROPERTIES, **(properties or {})}
    listed = ", ".join(f"'{key}'='{value}'" for key, value in settings.items())
    try:
        spark.sql(
            f"CREATE TABLE IF NOT EXISTS {identifier} ({ddl}) USING iceberg {partitioning}"
            f"TBLPROPERTIES ({listed})"
        )
    except Exception as error:
        reason = refusal_reason(error)
        if reason is None:
            raise
        # Not `from error`: the Java error quotes the server unmasked, and Dagster stores a step's causes.
        raise explain_refusal(spark, identifier, reason) from None
    rename_columns(spark, identifier, renamed or {})
    evolve_table(spark, identifier, columns)


def read_at(spark: SparkSession, identifier: str, snapshot_id: int | None) -> DataFrame:
    """The rows of the table at `snapshot_id` (None: as it is now, e.g. a table without snapshots),
    with the table's current columns: a column added since reads as null, as it does for rows written
    before it. Spark's row hashes skip nulls, so a fingerprint (`validation.fingerprints`) is the same as
    of the snapshot under its own schema.

    Read `VERSION AS OF` (the snapshot's own schema) and the added columns filled with typed nulls here:
    Iceberg 1.12's `snapshot-id` read option shows the current schema but binds pushed-down filters to
    the snapshot's, so a filter on a column added since fails the scan (`Cannot find field`).
    """
    current = spark.read.table(identifier)
    if snapshot_id is None:
        return current
    pinned = spark.sql(f"SELECT * FROM {identifier} VERSION AS OF {int(snapshot_id)}")
    present = set(pinned.columns)
    return pinned.select(
        *(
            F.col(f"`{field.name}`")
            if field.name in present
            else F.lit(None).cast(field.dataType).alias(field.name)
            for field in current.schema.fields
        )
    )


def in_range(column: str, start: date | datetime, end: date | datetime) -> Column:
    return (F.col(column) >= F.lit(start)) & (F.col(column) < F.lit(end))


def _only(df: DataFrame, column: str, allowed: Column, refusal: str) -> DataFrame:
    """`df` whose `column` raises `refusal` for a row outside `allowed` (or null), as the write computes it.

    The check rides in the write's own job instead of a counting job before it: a failing row fails the
    write's tasks, Iceberg aborts the write (its files are deleted) and nothing is committed.
    """
    failure = F.raise_error(F.lit(f"{_REFUSAL_MARKER}{refusal}"))
    return df.withColumn(column, F.when(allowed, F.col(column)).otherwise(failure))


def _refused(error: Exception) -> str | None:
    """The refusal `_only` raised inside a failed write, if that is why it failed."""
    text = str(error)
    at = text.find(_REFUSAL_MARKER)
    if at < 0:
        return None
    return text[at + len(_REFUSAL_MARKER) :].split("\n", 1)[0].strip()


def replace_range(
    df: DataFrame,
    identifier: str,
    column: str,
    start: date | datetime,
    end: date | datetime,
    properties: Mapping[str, Any] | None = None,
    options: Mapping[str, str] | None = None,
) -> int:
    """Replace every row with `start <= column < end` by `df`, in one commit; return the new snapshot id.

    `df` must hold only rows of the range: a row outside it would survive a later replacement of its own
    range, so it is refused instead of written.
    """
    refusal = f"refusing to write {identifier}: rows outside [{start}, {end}) on {column}"
    guarded = _only(df, column, in_range(column, start, end), refusal)
    days = -(-(_as_datetime(end) - _as_datetime(start)) // timedelta(days=1))
    options = {**writer_options(days), **(options or {})}
    return _overwrite(guarded, identifier, in_range(column, start, end), properties, options)


def replace_ranges(
    df: DataFrame,
    identifier: str,
    column: str,
    ranges: Collection[tuple[date | datetime, date | datetime]],
    partitions: int,
    properties: Mapping[str, Any] | None = None,
    options: Mapping[str, str] | None = None,
) -> int:
    """Replace every row whose `column` lies in one of `ranges` ([start, end) each) by `df`, in one commit;
    return the snapshot id. `partitions`: how many table partitions the ranges hold (for the writer).

    The ranges need not be contiguous: a promotion that holds some days (or hours) of its range back
    replaces the others and leaves those untouched. As with `replace_range`, rows outside are refused.
    """
    if not ranges:
        raise ValueError(f"refusing to write {identifier}: no partitions to replace")
    wanted = sorted(set(ranges))
    listed = ", ".join(f"[{start}, {end})" for start, end in wanted)
    inside = reduce(operator.or_, (in_range(column, start, end) for start, end in wanted))
    refusal = f"refusing to write {identifier}: rows outside the ranges {listed} on {column}"
    guarded = _only(df, column, inside, refusal)
    options = {**writer_options(partitions), **(options or {})}
    return _overwrite(guarded, identifier, inside, properties, options)


# Iceberg writes the partitions a task receives with one open file per partition (its fanout
# writer) unless told otherwise: a year in one task held some 300 Parquet writers and their buffers at
# once (hundreds of MiB of driver heap in local mode). Beyond this many partitions a write sorts its rows
# by partition instead and keeps one file open; below, the sort would cost more than the open files.
FANOUT_UP_TO_DAYS = 8


def writer_options(partitions: int) -> dict[str, str]:
    """Iceberg write options for a write that replaces `partitions` partitions (days, or hours)."""
    return {"fanout-enabled": "true" if partitions <= FANOUT_UP_TO_DAYS else "false"}


def _as_datetime(value: date | datetime) -> datetime:
    return value if isinstance(value, datetime) else datetime.combine(value, datetime.min.time())


def _overwrite(
    df: DataFrame,
    identifier: str,
    condition: Column,
    properties: Mapping[str, Any] | None,
    options: Mapping[str, str] | None,
) -> int:
    """One Iceberg `overwrite` commit: delete the rows matching `condition`, add `df`; tagged with a
    write id so that the snapshot it created is found for sure."""
    write_id = uuid.uuid4().hex
    writer = df.writeTo(identifier)
    for key, value in (options or {}).items():
        writer = writer.option(key, value)
    for key, value in {**(properties or {}), WRITE_ID: write_id}.items():
        writer = writer.option(f"snapshot-property.{key}", str(value))
    # Spark's UI and event log name the write's jobs (a DataFrame write has no call site of its own).
    context = df.sparkSession.sparkContext
    caller_description = context.getLocalProperty("spark.job.description")
    context.setJobDescription(f"write {identifier}")
    try:
        writer.overwrite(condition)
    except Exception as error:
        refusal = _refused(error)
        if refusal is None:
            raise
        raise ValueError(refusal) from None
    finally:
        context.setJobDescription(caller_description)  # None clears it
    return snapshot_of_write(df.sparkSession, identifier, write_id)


def snapshot_of_write(spark: SparkSession, identifier: str, write_id: str) -> int:
    """The snapshot a write created (not whatever `main` points to by now: others may have committed)."""
    found = snapshots.find_snapshot(spark, identifier, WRITE_ID, write_id)
    if len(found) != 1:
        raise RuntimeError(
            f"{identifier}: expected one snapshot with {WRITE_ID}={write_id}, found {len(found)}"
        )
    return found[0]["snapshot_id"]


def snapshot_summary(spark: SparkSession, identifier: str, snapshot_id: int) -> dict[str, str]:
    details = snapshots.snapshot_details(spark, identifier, snapshot_id)
    if details is None:
        raise ValueError(f"{identifier} has no snapshot {snapshot_id}")
    return {**details["summary"], "parent-id": str(details["parent_id"])}


def table_exists(spark: SparkSession, identifier: str) -> bool:
    return bool(spark.catalog.tableExists(identifier))
