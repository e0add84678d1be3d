"""The production asset of a dataset: materializing a range is promoting it from the active shadow."""

from collections.abc import Iterator, Sequence

from dagster import (
    AssetExecutionContext,
    AssetMaterialization,
    AssetsDefinition,
    AutomationCondition,
    Failure,
    MetadataValue,
)

from backfill_platform.lakehouse.resources import SparkIcebergResource
from backfill_platform.lakehouse.tables import PROD_NAMESPACE
from backfill_platform.pipeline.erasure.proof import (
    ERASURE_HONORED,
    PRODUCTION_DESCRIPTION,
    held_subject_column,
    honored_requests,
)
from backfill_platform.pipeline.names import production_key, shadow_key
from backfill_platform.pipeline.partitions import dataset_partitions, local_days_note, window_partitions
from backfill_platform.pipeline.promotion.checks import (
    PROMOTION_VERIFIED,
    PROMOTION_VERIFIED_DESCRIPTION,
    production_checks,
)
from backfill_platform.pipeline.promotion.promote import promote
from backfill_platform.pipeline.run_settings import (
    PROMOTION_POLICY_TAG,
    ProductionConfig,
    PromotionPolicy,
    step_settings,
)
from backfill_platform.pipeline.run_tags import run_properties
from backfill_platform.pipeline.spark_asset import partitioned_spark_asset
from backfill_platform.pipeline.validation.verdicts import (
    check_evaluations,
    check_outputs,
    judged_materializations,
)
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.stream import StreamSpec


def build_production_asset(
    spec: DatasetSpec,
    sources: Sequence[StreamSpec],
    automation_condition: AutomationCondition | None = None,
) -> AssetsDefinition:
    """Production of a dataset; `sources` are its source streams (one or each it declares)."""
    key = production_key(spec)
    primary = next(s for s in sources if s.name == spec.primary_stream)
    version = spec.active_version
    checks = {PROMOTION_VERIFIED: PROMOTION_VERIFIED_DESCRIPTION}
    holds_subject = held_subject_column(spec, sources) is not None
    if holds_subject:
        checks[ERASURE_HONORED] = PRODUCTION_DESCRIPTION

    @partitioned_spark_asset(
        key,
        primary,
        partitions=dataset_partitions(spec, primary),
        deps=[shadow_key(spec, version)],
        checks=checks,
        automation_condition=automation_condition,
        group_name=spec.name,
        owner=spec.owner,
        description=(
            f"Production `{spec.name}`, what consumers read: {spec.description} Changed only by "
            f"promotion — one Iceberg commit that replaces the range with the validated partitions of "
            f"shadow {version}. Refuses days whose blocking checks did not pass on the shadow's "
            "current data, or whose events changed since. One bad day holds back the whole range, "
            f"unless the run tag `{PROMOTION_POLICY_TAG}` (or this asset's config `promotion_policy`) is "
            f"`{PromotionPolicy.per_day}`: then the validated days are "
            "promoted in one commit and the others are held back and reported." + local_days_note(spec)
        ),
        metadata={"table": f"{PROD_NAMESPACE}.{spec.name}", "active_version": version},
        # One promotion per table at a time: a backfill and a live refresh queue instead of racing.
        pool=f"promote_{spec.name}",
    )
    def _production(
        context: AssetExecutionContext, config: ProductionConfig, spark: SparkIcebergResource
    ) -> Iterator:
        start, end, _ = window_partitions(context)
        per_day = step_settings(context, config).per_partition
        # The production commit names the requests its rows honor (the shadow's check proved them).
        properties = {**run_properties(context), **honored_requests(spark.spark_session, sources)}
        promotion = promote(spark.spark_session, spec, sources, start, end, properties, per_day=per_day)
        revert = f"backfill-platform revert --dataset {spec.name} --snapshot {promotion.snapshot_id}"
        for partition in promotion.partitions:
            yield AssetMaterialization(
                asset_key=key,
                partition=partition,
                metadata={
                    "rows": promotion.rows_by_partition[partition],
                    "snapshot_id": str(promotion.snapshot_id),
                    "previous_snapshot_id": str(promotion.previous_snapshot_id),
                    "shadow_snapshot_id": str(promotion.shadow_snapshot_id),
                    "version": version,
                    "provisional": partition in promotion.provisional_partitions,
                    "revert": MetadataValue.text(revert),
                },
            )
        verdicts = production_checks(spark.spark_session, spec, sources, promotion, holds_subject)
        selected = {check.name for check in context.selected_asset_check_keys}
        targets = judged_materializations(context, key, promotion.partitions)
        yield from check_evaluations(key, verdicts, selected, per_day, targets)
        yield from check_outputs(context)
        if promotion.held_back:
            held = "; ".join(f"{p}: {reason}" for p, reason in sorted(promotion.held_back.items()))
            raise Failure(
                description=(
                    f"promoted {len(promotion.partitions)} {spec.grain.plural} of {spec.name} in snapshot "
                    f"{promotion.snapshot_id}; "
                    f"held back {len(promotion.held_back)}: {held}"
                ),
                metadata={"held_back": MetadataValue.json(promotion.held_back)},
            )

    return _production
