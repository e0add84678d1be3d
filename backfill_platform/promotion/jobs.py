"""Operational jobs: revert a promotion from the Dagster UI (the CLI offers the same)."""

from dagster import Config, Failure, OpExecutionContext, job, op
from pydantic import Field

from backfill_platform.lakehouse.resources import SparkIcebergResource
from backfill_platform.promotion.revert import revert_promotion
from backfill_platform.specs.loader import load_specs


class RevertConfig(Config):
    dataset: str = Field(description="Dataset whose production promotion is reverted.")
    snapshot_id: int | None = Field(default=None, description="Promotion snapshot; default: the latest one.")
    reason: str = Field(default="revert", description="Why; recorded on the revert's snapshot.")


@op
def revert_promotion_op(
    context: OpExecutionContext, config: RevertConfig, spark: SparkIcebergResource
) -> None:
    """Restore exactly the partitions of one promotion to their previous contents, in one commit."""
    datasets = load_specs().datasets
    if config.dataset not in datasets:
        raise Failure(f"unknown dataset {config.dataset!r}; known: {sorted(datasets)}")
    spec = datasets[config.dataset]
    result = revert_promotion(spark.spark_session, spec, config.snapshot_id, config.reason)
    context.log.info(
        f"reverted promotion {result.promotion_snapshot_id} of {spec.name} [{result.start}, {result.end}) "
        f"with snapshot {result.snapshot_id} ({result.rows_restored} rows restored)"
    )


@job(description="Revert one promotion of a production table, leaving later unrelated commits intact.")
def revert_promotion_job() -> None:
    revert_promotion_op()
