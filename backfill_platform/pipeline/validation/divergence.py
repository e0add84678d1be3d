"""Divergence of a candidate table against production, by key: only in one side, or changed."""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from backfill_platform.pipeline.tables.dataset_tables import table_partition
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.grain import value_key

SAMPLE_ROWS = 20


@dataclass
class PartitionDivergence:
    candidate_rows: int = 0
    production_rows: int = 0
    only_in_candidate: int = 0
    only_in_production: int = 0
    changed: int = 0

    @property
    def diverging(self) -> int:
        return self.only_in_candidate + self.only_in_production + self.changed

    @property
    def ratio(self) -> float:
        base = max(self.candidate_rows, self.production_rows)
        return self.diverging / base if base else 0.0


@dataclass
class Divergence:
    partitions: dict[str, PartitionDivergence] = field(default_factory=dict)
    sample_header: list[str] = field(default_factory=list)  # the columns of the samples
    sample_rows: list[list] = field(default_factory=list)  # the first differing rows of the range
    samples: dict[str, list[list]] = field(default_factory=dict)  # day -> its first differing rows
    notes: dict[str, str] = field(default_factory=dict)  # day -> why it has no sample, if it says so

    @property
    def diverging(self) -> int:
        return sum(p.diverging for p in self.partitions.values())

    @property
    def ratio(self) -> float:
        base = sum(max(p.candidate_rows, p.production_rows) for p in self.partitions.values())
        return self.diverging / base if base else 0.0


def compare(candidate: DataFrame, production: DataFrame, spec: DatasetSpec, days: list[str]) -> Divergence:
    """Full outer join on the key columns, counted per partition (`days`: their keys, days or hours), with
    a sample of differing rows."""
    keys, values = spec.key_columns, spec.value_columns
    c = candidate.select(*keys, F.struct(*values).alias("_c"))
    p = production.select(*keys, F.struct(*values).alias("_p"))
    joined = c.join(p, on=keys, how="full_outer").withColumn(
        "_kind",
        F.when(F.col("_p").isNull(), "only_in_candidate")
        .when(F.col("_c").isNull(), "only_in_production")
        .when(~F.col("_c").eqNullSafe(F.col("_p")), "changed")
        .otherwise("same"),
    )
    kinds = ("only_in_candidate", "only_in_production", "changed")
    rows = (
        joined.groupBy(table_partition(spec).alias("day"))
        .agg(
            F.count(F.col("_c")).alias("candidate_rows"),
            F.count(F.col("_p")).alias("production_rows"),
            *(F.count(F.when(F.col("_kind") == k, 1)).alias(k) for k in kinds),
        )
        .collect()
    )
    result = Divergence(partitions={day: PartitionDivergence() for day in days})
    for row in rows:
        result.partitions[value_key(row["day"])] = PartitionDivergence(
            **{name: row[name] for name in ("candidate_rows", "production_rows", *kinds)}
        )
    # A day production never had is all new rows: saying so needs no sample (and no Spark job).
    for day, partition in result.partitions.items():
        if partition.production_rows == 0 and partition.candidate_rows:
            result.notes[day] = (
                f"production has no rows for {day}: all {partition.candidate_rows} rows are new"
            )
    if any(p.diverging and p.production_rows for p in result.partitions.values()):
        # Up to SAMPLE_ROWS differing rows per day, in key order: each day's check shows its own.
        first = Window.partitionBy(spec.partition_column).orderBy(*keys)
        sample = (
            joined.where(F.col("_kind") != "same")
            .withColumn("_n", F.row_number().over(first))
            .where(F.col("_n") <= SAMPLE_ROWS)
            .select(
                "_kind",
                *keys,
                *(F.col(f"_p.{v}").alias(f"prod_{v}") for v in values),
                *(F.col(f"_c.{v}").alias(f"new_{v}") for v in values),
                table_partition(spec).alias("_partition"),  # its key, dropped from the sample
            )
            .orderBy(*keys)
            .collect()
        )
        result.sample_header = list(sample[0].asDict())[:-1]
        for day in days:
            rows = [list(r)[:-1] for r in sample if value_key(r["_partition"]) == day]
            if rows and result.partitions[day].production_rows:
                result.samples[day] = rows
        result.sample_rows = [list(r)[:-1] for r in sample[:SAMPLE_ROWS]]
    return result
