"""Shadow migration (v1 → v2): compare a candidate with production over all history; retire old shadows.

Switching `active_version` is a reviewed change of the dataset spec; `history_divergence` is what the
reviewer reads before approving it, and after the switch the lineage shows production fed by the new
version. Dropping a retired version's shadow table is a separate, explicit step.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from backfill_platform.lakehouse.tables import table_exists
from backfill_platform.pipeline.names import production_table, shadow_table
from backfill_platform.pipeline.tables.dataset_tables import columns_ddl, table_partition
from backfill_platform.pipeline.validation.divergence import Divergence, compare
from backfill_platform.specs.common import check_identifier
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.grain import value_key


def history_divergence(spark: SparkSession, spec: DatasetSpec, version: str) -> Divergence:
    """Divergence of a version's shadow against production, over every partition either side holds."""
    candidate_id, production_id = shadow_table(spark, spec, version), production_table(spark, spec)
    empty = spark.createDataFrame([], columns_ddl(spec))
    candidate = spark.table(candidate_id) if table_exists(spark, candidate_id) else empty
    production = spark.table(production_id) if table_exists(spark, production_id) else empty
    days = sorted(
        {value_key(r[0]) for r in candidate.select(table_partition(spec)).distinct().collect()}
        | {value_key(r[0]) for r in production.select(table_partition(spec)).distinct().collect()}
    )
    return compare(candidate, production, spec, days)


def drop_shadow(spark: SparkSession, spec: DatasetSpec, version: str) -> str:
    """Drop the shadow table of a version that no longer feeds production; return its identifier."""
    check_identifier(version, "version")  # whole: `v1\n` would name the active `v1` table in Spark's SQL
    if version == spec.active_version:
        raise ValueError(f"{version} is the active version of {spec.name}; switch active_version first")
    identifier = shadow_table(spark, spec, version)
    if not table_exists(spark, identifier):
        raise ValueError(f"{identifier} does not exist")
    spark.sql(f"DROP TABLE {identifier} PURGE")
    return identifier
