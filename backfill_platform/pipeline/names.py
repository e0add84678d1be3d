"""The names every stage agrees on: each stage's Dagster asset key and the Iceberg ids of its tables.

They live here, on the ground floor of the pipeline, so that no stage imports another just for a name:
the events asset depends on the archive's key, a shadow reads the events table, promotion writes the
production table, and each of them finds the name here. Only names: the tables are created where they
are written (`events.ingest.ensure_stream_tables`, `tables.dataset_tables.ensure_dataset_table`).
"""

from dagster import AssetKey
from pyspark.sql import SparkSession

from backfill_platform.lakehouse.tables import PROD_NAMESPACE, RAW_NAMESPACE, SHADOW_NAMESPACE, table_id
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.stream import StreamSpec


def archive_key(spec: StreamSpec) -> AssetKey:
    """`archive/<stream>_archive`: the key of a stream's observable archive."""
    return AssetKey(["archive", f"{spec.name}_archive"])


def events_key(spec: StreamSpec) -> AssetKey:
    """`raw/<events table>`: the key of a stream's events asset, named as its table is."""
    return AssetKey([RAW_NAMESPACE, spec.events_table])


def events_table(spark: SparkSession, spec: StreamSpec) -> str:
    """The fully qualified id of a stream's events table, in the session's catalog."""
    return table_id(spark, RAW_NAMESPACE, spec.events_table)


def quarantine_table(spark: SparkSession, spec: StreamSpec) -> str:
    """The fully qualified id of a stream's quarantine table, in the session's catalog."""
    return table_id(spark, RAW_NAMESPACE, spec.quarantine_table)


def shadow_key(spec: DatasetSpec, version: str) -> AssetKey:
    """`shadow/<shadow table>`: the key of one version's shadow asset, named as its table is."""
    return AssetKey([SHADOW_NAMESPACE, spec.shadow_table(version)])


def shadow_table(spark: SparkSession, spec: DatasetSpec, version: str) -> str:
    """The fully qualified id of one version's shadow table, in the session's catalog."""
    return table_id(spark, SHADOW_NAMESPACE, spec.shadow_table(version))


def production_key(spec: DatasetSpec) -> AssetKey:
    """`prod/<dataset>_production`: the lineage names it production, not just the dataset (its group)."""
    return AssetKey([PROD_NAMESPACE, f"{spec.name}_production"])


def production_table(spark: SparkSession, spec: DatasetSpec) -> str:
    """The fully qualified id of a dataset's production table, `prod.<dataset>`, in the session's catalog."""
    return table_id(spark, PROD_NAMESPACE, spec.name)
