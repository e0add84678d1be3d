"""Dataset tables: one shadow per version, one production table, all partitioned by the event day."""

from __future__ import annotations

from datetime import date

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from backfill_platform.lakehouse.tables import (
    PROD_NAMESPACE,
    SHADOW_NAMESPACE,
    ensure_table,
    in_range,
    table_exists,
    table_id,
)
from backfill_platform.specs.common import FIELD_TYPES
from backfill_platform.specs.dataset import DatasetSpec


def shadow_table(spark: SparkSession, spec: DatasetSpec, version: str) -> str:
    return table_id(spark, SHADOW_NAMESPACE, spec.shadow_table(version))


def production_table(spark: SparkSession, spec: DatasetSpec) -> str:
    return table_id(spark, PROD_NAMESPACE, spec.name)


def columns_ddl(spec: DatasetSpec) -> str:
    return ", ".join(f"{name} {FIELD_TYPES[kind]}" for name, kind in spec.columns.items())


def ensure_dataset_table(spark: SparkSession, spec: DatasetSpec, identifier: str) -> None:
    ensure_table(spark, identifier, columns_ddl(spec), spec.partition_column)


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
    start: date,
    end: date,
    snapshot_id: int | None = None,
) -> DataFrame:
    """Rows of [start, end) of a dataset table, at a pinned snapshot when given (empty if no table)."""
    if not table_exists(spark, identifier):
        return spark.createDataFrame([], columns_ddl(spec))
    pinned = f" VERSION AS OF {int(snapshot_id)}" if snapshot_id is not None else ""
    return spark.sql(f"SELECT * FROM {identifier}{pinned}").where(in_range(spec.partition_column, start, end))
