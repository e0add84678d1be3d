"""The production asset of a dataset: materializing a range is promoting it from the active shadow."""

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    MaterializeResult,
    MetadataValue,
    asset,
)

from backfill_platform.lakehouse.resources import SparkIcebergResource
from backfill_platform.lakehouse.tables import PROD_NAMESPACE
from backfill_platform.partitions import backfill_policy, event_partitions
from backfill_platform.promotion.promote import promote
from backfill_platform.shadow.assets import shadow_key, window_days
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.stream import StreamSpec
from backfill_platform.utils import run_properties
from backfill_platform.validation.markdown import markdown_table

PROMOTION_VERIFIED = "promotion_verified"


def production_key(spec: DatasetSpec) -> AssetKey:
    return AssetKey([PROD_NAMESPACE, spec.name])


def build_production_asset(spec: DatasetSpec, stream: StreamSpec) -> AssetsDefinition:
    key = production_key(spec)
    version = spec.active_version

    @asset(
        key=key,
        deps=[shadow_key(spec, version)],
        partitions_def=event_partitions(stream),
        backfill_policy=backfill_policy(stream.max_partitions_per_run),
        group_name=spec.name,
        kinds={"spark", "iceberg"},
        owners=[spec.owner],
        # One promotion per table at a time: a backfill and a live refresh queue instead of racing.
        pool=f"promote_{spec.name}",
        description=(
            f"Production `{spec.name}`, what consumers read: {spec.description} Changed only by promotion — "
            f"one Iceberg commit that replaces the range with the validated partitions of shadow {version}. "
            "Refuses partitions whose blocking checks did not pass on the shadow's current data."
        ),
        metadata={"table": f"{PROD_NAMESPACE}.{spec.name}", "active_version": version},
        check_specs=[
            AssetCheckSpec(
                PROMOTION_VERIFIED, asset=key, description="production equals the shadow, bucket by bucket"
            )
        ],
    )
    def _production(context: AssetExecutionContext, spark: SparkIcebergResource) -> MaterializeResult:
        start, end, _ = window_days(context)
        promotion = promote(spark.spark_session, spec, start, end, run_properties(context))
        mismatches = [[d, h, p] for (d, h), p in promotion.mismatched_buckets.items()]
        return MaterializeResult(
            metadata={
                "snapshot_id": str(promotion.snapshot_id),
                "previous_snapshot_id": str(promotion.previous_snapshot_id),
                "shadow_snapshot_id": str(promotion.shadow_snapshot_id),
                "version": version,
                "rows": promotion.rows,
                "revert": MetadataValue.text(
                    f"backfill-platform revert --dataset {spec.name} --snapshot {promotion.snapshot_id}"
                ),
            },
            check_results=[
                AssetCheckResult(
                    asset_key=key,
                    check_name=PROMOTION_VERIFIED,
                    passed=promotion.verified,
                    severity=AssetCheckSeverity.ERROR,
                    metadata={
                        "buckets_differing": len(mismatches),
                        "differences": MetadataValue.md(
                            markdown_table(["day", "hour", "difference"], mismatches[:20])
                        ),
                    },
                )
            ],
        )

    return _production
