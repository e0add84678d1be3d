"""Dataset tables: one shadow per version, one production table, all partitioned by the event day."""

from __future__ import annotations

from collections.abc import Collection
from datetime import date, datetime

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from backfill_platform.lakehouse.tables import ensure_table, in_range, read_at, table_exists
from backfill_platform.pipeline.partitions import partition_of
from backfill_platform.specs.common import FIELD_TYPES
from backfill_platform.specs.dataset import DatasetSpec


def columns(spec: DatasetSpec) -> list[tuple[str, str]]:
    """The declared output columns as `(name, Spark SQL type)`."""
    return [(name, FIELD_TYPES[kind]) for name, kind in spec.columns.items()]


def columns_ddl(spec: DatasetSpec) -> str:
    return ", ".join(f"{name} {kind}" for name, kind in columns(spec))


def ensure_dataset_table(spark: SparkSession, spec: DatasetSpec, identifier: str) -> None:
    """Create a shadow or production table, or add the output columns the spec has gained since.

    A daily dataset is partitioned by its date column's values, an hourly one by `hours(...)` of its
    timestamp column: a promotion or revert of a partition then replaces whole files."""
    partitioning = spec.partition_column
    if spec.grain.unit == "hour":
        partitioning = f"hours({spec.partition_column})"
    ensure_table(spark, identifier, columns(spec), partitioning)


def table_partition(spec: DatasetSpec) -> Column:
    """A dataset table row's partition: a daily table's date as it is, an hourly table's hour as its key
    (`specs.grain.value_key` turns a collected value into the key)."""
    if spec.grain.unit == "day":
        return F.col(spec.partition_column)
    return partition_of(spec.grain, spec.partition_column)


def partition_ranges(spec: DatasetSpec, keys: Collection[str]) -> list[tuple[date | datetime, ...]]:
    """The partitions `keys` as [start, end) ranges of the partition column's values, contiguous
    partitions merged: what `lakehouse.tables.replace_ranges` replaces."""
    grain = spec.grain
    merged: list[list[datetime]] = []
    for start in sorted(grain.start(key) for key in set(keys)):
        if merged and merged[-1][1] == start:
            merged[-1][1] = grain.end(start)
        else:
            merged.append([start, grain.end(start)])
    return [spec.partition_bounds(start, end) for start, end in merged]


def conform(df: DataFrame, spec: DatasetSpec, version: str) -> DataFrame:
    """The transform's output in the declared column order and types; missing columns are an error."""
    missing = [c for c in spec.columns if c not in df.columns]
    if missing:
        raise ValueError(f"{spec.name} {version}: the transform's output lacks declared columns {missing}")
    return df.select(*(F.col(c).cast(FIELD_TYPES[kind]).alias(c) for c, kind in spec.columns.items()))


def read_range(
    spark: SparkSession,
    identifier: str,
    spec: DatasetSpec,
    start: date | datetime,
    end: date | datetime,
    snapshot_id: int | None = None,
) -> DataFrame:
    """Rows of [start, end) of a dataset table, at a pinned snapshot when given (empty if no table).
    Instants are read as the partition column's values (`DatasetSpec.partition_bounds`)."""
    if not table_exists(spark, identifier):
        return spark.createDataFrame([], columns_ddl(spec))
    if isinstance(start, datetime) and isinstance(end, datetime):
        start, end = spec.partition_bounds(start, end)
    rows = read_at(spark, identifier, snapshot_id).where(in_range(spec.partition_column, start, end))
    return with_declared_columns(rows, spec)


def with_declared_columns(df: DataFrame, spec: DatasetSpec) -> DataFrame:
    """`df` with the declared columns it lacks added as typed nulls, after its own columns.

    A table (or a pinned snapshot) from before the spec gained an output column reads as Iceberg reads
    rows written before a column was added: null. Production gains the column only when it is next
    promoted to, but the shadow step already compares against it.
    """
    missing = {name: F.lit(None).cast(kind) for name, kind in columns(spec) if name not in df.columns}
    return df.withColumns(missing) if missing else df
