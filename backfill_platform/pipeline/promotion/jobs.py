"""Operational jobs: revert a promotion from the Dagster UI (the CLI offers the same).

A revert (or an adoption) changes what production holds for some days outside any materialization of
the production asset. So that the UI's partitions of `prod/<dataset>_production` show what production holds now,
each restored or adopted day is reported as a materialization of that partition, with the snapshot.
"""

from dagster import AssetMaterialization, Config, Failure, OpExecutionContext, ResourceParam, job, op
from pydantic import Field

from backfill_platform.lakehouse.resources import SparkIcebergResource
from backfill_platform.pipeline.names import production_key
from backfill_platform.pipeline.promotion.revert import Revert, revert_promotion
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.spec_set import SpecSet


class RevertConfig(Config):
    dataset: str = Field(description="Dataset whose production promotion is reverted.")
    snapshot_id: int | None = Field(default=None, description="Promotion snapshot; default: the latest one.")
    reason: str = Field(default="revert", description="Why; recorded on the revert's snapshot.")


def revert_materializations(spec: DatasetSpec, revert: Revert, reason: str) -> list[AssetMaterialization]:
    """One materialization of `prod/<dataset>_production` per day the revert restored."""
    return [
        AssetMaterialization(
            asset_key=production_key(spec),
            partition=day,
            description=f"reverted promotion {revert.promotion_snapshot_id}: {reason}",
            metadata={
                "action": "revert",
                "snapshot_id": str(revert.snapshot_id),
                "reverts_snapshot_id": str(revert.promotion_snapshot_id),
                "rows": revert.rows_by_partition[day],
                "reason": reason,
            },
        )
        for day in revert.partitions
    ]


def adopt_materializations(
    spec: DatasetSpec, snapshot_id: int | None, rows_by_partition: dict[str, int], source: str, reason: str
) -> list[AssetMaterialization]:
    """One materialization of `prod/<dataset>_production` per adopted day (unvalidated, and said so)."""
    return [
        AssetMaterialization(
            asset_key=production_key(spec),
            partition=day,
            description=f"adopted from {source} (unvalidated): {reason}",
            metadata={
                "action": "adopt",
                "snapshot_id": str(snapshot_id),
                "adopted_from": source,
                "validated": False,
                "rows": rows,
                "reason": reason,
            },
        )
        for day, rows in sorted(rows_by_partition.items())
    ]


@op
def revert_promotion_op(
    context: OpExecutionContext,
    config: RevertConfig,
    spark: SparkIcebergResource,
    specs: ResourceParam[SpecSet],
) -> None:
    """Restore exactly the partitions of one promotion to their previous contents, in one commit."""
    datasets = specs.datasets
    if config.dataset not in datasets:
        raise Failure(f"unknown dataset {config.dataset!r}; known: {sorted(datasets)}")
    spec = datasets[config.dataset]
    result = revert_promotion(
        spark.spark_session, spec, config.snapshot_id, config.reason, list(specs.streams.values())
    )
    context.log.info(
        f"reverted promotion {result.promotion_snapshot_id} of {spec.name} ({', '.join(result.partitions)}) "
        f"with snapshot {result.snapshot_id} ({result.rows_restored} rows restored)"
    )
    for materialization in revert_materializations(spec, result, config.reason):
        context.log_event(materialization)


@job(description="Revert one promotion of a production table, leaving later unrelated commits intact.")
def revert_promotion_job() -> None:
    revert_promotion_op()
