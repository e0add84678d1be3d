"""Shadow assets: one per dataset version, each an Iceberg table that production can be promoted from."""

from collections.abc import Iterator, Mapping
from datetime import date

from dagster import (
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    AssetSpec,
    AutomationCondition,
    Config,
    Failure,
    multi_asset,
)
from pydantic import Field

from backfill_platform.faults import SHADOW_BEFORE_CHECKS, failpoint
from backfill_platform.lakehouse.resources import SparkIcebergResource
from backfill_platform.lakehouse.tables import (
    SHADOW_NAMESPACE,
    current_snapshot_id,
    in_range,
    read_at,
    replace_range,
    table_exists,
)
from backfill_platform.pipeline.events.assets import events_key
from backfill_platform.pipeline.events.ingest import events_table
from backfill_platform.pipeline.ledger.commits import VERSION
from backfill_platform.pipeline.ledger.ledger import latest_ingestions, record_validation
from backfill_platform.pipeline.partitions import backfill_policy, event_partitions, window_days
from backfill_platform.pipeline.run_tags import PER_DAY, promotion_policy, run_properties
from backfill_platform.pipeline.shadow.validate import (
    CHECK_DESCRIPTIONS,
    MAX_DIVERGENCE_TAG,
    validate_shadow,
)
from backfill_platform.pipeline.tables.dataset_tables import (
    conform,
    ensure_dataset_table,
    production_table,
    read_range,
    shadow_table,
)
from backfill_platform.pipeline.validation.buckets import day_fingerprints_of, events_figures
from backfill_platform.pipeline.validation.checksums import Fingerprint
from backfill_platform.pipeline.validation.outcome import ShadowValidation
from backfill_platform.pipeline.validation.snapshot_figures import events_expectations, table_figures
from backfill_platform.pipeline.validation.verdicts import day_outcomes
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.stream import StreamSpec


class ShadowConfig(Config):
    max_divergence_ratio: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description=(
            "Block promotion of partitions whose divergence from production exceeds this share of rows. "
            f"Unset: the run tag `{MAX_DIVERGENCE_TAG}` decides; without it divergence only warns."
        ),
    )


def shadow_key(spec: DatasetSpec, version: str) -> AssetKey:
    return AssetKey([SHADOW_NAMESPACE, spec.shadow_table(version)])


def divergence_bound(config: ShadowConfig, tags: Mapping[str, str]) -> float | None:
    """The launched bound on divergence: asset config first, else the run tag; None = warn only."""
    if config.max_divergence_ratio is not None:
        return config.max_divergence_ratio
    tag = tags.get(MAX_DIVERGENCE_TAG)
    if tag is None:
        return None
    try:
        bound = float(tag)
    except ValueError:
        bound = -1.0
    if not 0 <= bound <= 1:
        raise ValueError(f"run tag {MAX_DIVERGENCE_TAG}={tag!r} must be a ratio between 0 and 1, e.g. 0.05")
    return bound


def build_shadow_asset(
    spec: DatasetSpec,
    stream: StreamSpec,
    version: str,
    automation_condition: AutomationCondition | None = None,
) -> AssetsDefinition:
    key = shadow_key(spec, version)
    version_spec = spec.versions[version]
    # Resolved when definitions load, so a mistyped transform fails there, naming the dataset.
    transform = version_spec.load_transform()
    is_active = version == spec.active_version
    active = " (active: feeds production)" if is_active else ""
    partitions = event_partitions(stream)

    @multi_asset(
        name=key.to_python_identifier(),
        specs=[
            AssetSpec(
                key,
                deps=[events_key(stream)],
                partitions_def=partitions,
                # A day that fails a blocking check is not materialized (see pipeline/validation/verdicts.py).
                skippable=True,
                automation_condition=automation_condition,
                # Other versions sit in a group of their own, out of the production path's
                # "Materialize all".
                group_name=spec.name if is_active else f"{spec.name}_other_versions",
                kinds={"spark", "iceberg"},
                owners=[spec.owner],
                description=(
                    f"Shadow of `{spec.name}` computed by version **{version}**{active}: "
                    f"{version_spec.description} Transform `{version_spec.transform}` over the "
                    f"`{stream.name}` events of the range, written to "
                    f"`{SHADOW_NAMESPACE}.{spec.shadow_table(version)}` (range replaced in one commit), then "
                    f"checked day by day, per {spec.bucket} bucket, against the events. Consumers never read it; "
                    "production is promoted from it."
                ),
                metadata={"table": f"{SHADOW_NAMESPACE}.{spec.shadow_table(version)}", "version": version},
            )
        ],
        check_specs=[
            AssetCheckSpec(name, asset=key, blocking=True, partitions_def=partitions, description=text)
            for name, text in CHECK_DESCRIPTIONS.items()
        ],
        # Makes the check outputs optional: verdicts are reported per day as check evaluations.
        can_subset=True,
        backfill_policy=backfill_policy(stream.max_partitions_per_run),
    )
    def _shadow(
        context: AssetExecutionContext, config: ShadowConfig, spark: SparkIcebergResource
    ) -> Iterator:
        session = spark.spark_session
        start, end, days = window_days(context)
        max_ratio = divergence_bound(config, context.run.tags)
        per_day = promotion_policy(context.run.tags) == PER_DAY
        window = context.partition_time_window
        source = events_table(session, stream)
        if not table_exists(session, source):
            raise Failure(
                f"{source} does not exist yet: materialize {events_key(stream).to_user_string()} first"
            )
        # Pinned: the transform and the expectations it is checked against see the same events.
        snapshot_id = current_snapshot_id(session, source)
        events = read_at(session, source, snapshot_id).where(in_range("event_time", window.start, window.end))
        ingestions = latest_ingestions(session, stream.name, [date.fromisoformat(d) for d in days])
        # One pass over the pinned events: what they imply per bucket, and each day's fingerprint.
        if snapshot_id is not None:
            expected, events_fingerprints = events_expectations(session, source, spec, days, snapshot_id)
        else:
            expected, events_fingerprints = events_figures(events, spec, days)
        # Persisted: the range check before the write and the write itself must not run the transform twice.
        output = conform(transform(events), spec, version).persist()
        target = shadow_table(session, spec, version)
        ensure_dataset_table(session, spec, target)
        properties = {**run_properties(context), VERSION: version}
        try:
            snapshot = replace_range(output, target, spec.partition_column, start, end, properties)
        finally:
            output.unpersist()

        failpoint(SHADOW_BEFORE_CHECKS)
        shadow = read_range(session, target, spec, start, end, snapshot)
        # Computed once at this snapshot; promotion in this run gates and verifies against the same.
        actual = table_figures(session, target, spec, start, end, snapshot)
        production = read_range(session, production_table(session, spec), spec, start, end)
        validation = validate_shadow(
            spec,
            version,
            expected,
            shadow,
            actual,
            production,
            days,
            ingestions,
            events_fingerprints,
            max_ratio,
        )
        fingerprints = day_fingerprints_of(actual, days)
        record_validation(
            session,
            context,
            spec,
            stream,
            version,
            snapshot,
            validation,
            fingerprints,
            ingestions,
            events_fingerprints,
        )
        yield from day_outcomes(
            context,
            key,
            validation.verdicts,
            day_metadata(spec, validation, fingerprints),
            {"table": target, "snapshot_id": str(snapshot), "check_digest": validation.digest},
            per_day,
        )

    return _shadow


def day_metadata(
    spec: DatasetSpec, validation: ShadowValidation, fingerprints: dict[str, Fingerprint]
) -> dict[str, dict]:
    """Per-day numbers (rows, sums, divergence, verdict) that the UI plots across partitions."""
    result = {}
    for day in validation.days:
        sums = {
            f"sum_{rule.column}": sum(
                f.sums[rule.column] for b, f in validation.actual.items() if b[0] == day
            )
            for rule in spec.reconciliation
        }
        result[day] = {
            **fingerprints[day].metadata(),
            **sums,
            "diverging_rows": validation.divergence.partitions[day].diverging,
            "checks_passed": validation.passed(day),
            "failed_checks": ", ".join(validation.failed.get(day, [])) or "none",
        }
    return result
