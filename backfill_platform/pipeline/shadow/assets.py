"""Shadow assets: one per dataset version, each an Iceberg table that production can be promoted from."""

from collections.abc import Iterator, Sequence
from typing import Any

from dagster import AssetDep, AssetExecutionContext, AssetsDefinition, AutomationCondition, Failure

from backfill_platform.faults import SHADOW_BEFORE_CHECKS, failpoint
from backfill_platform.lakehouse.resources import SparkIcebergResource
from backfill_platform.lakehouse.tables import SHADOW_NAMESPACE, replace_range, table_exists
from backfill_platform.pipeline.erasure.proof import (
    ERASURE_HONORED,
    SHADOW_DESCRIPTION,
    honored_requests,
    shadow_erasure_verdicts,
)
from backfill_platform.pipeline.ledger.commits import VERSION
from backfill_platform.pipeline.ledger.ledger import record_validation
from backfill_platform.pipeline.lookback_mapping import LookbackMapping
from backfill_platform.pipeline.names import (
    events_key,
    events_table,
    production_table,
    shadow_key,
    shadow_table,
)
from backfill_platform.pipeline.partitions import dataset_partitions, local_days_note, window_partitions
from backfill_platform.pipeline.run_settings import ShadowConfig, step_settings
from backfill_platform.pipeline.run_tags import run_properties
from backfill_platform.pipeline.shadow.checks import (
    CHECK_DESCRIPTIONS,
    DIVERGENCE,
    validate_shadow,
)
from backfill_platform.pipeline.shadow.inputs import judge_inputs, read_source
from backfill_platform.pipeline.source_window_mapping import LocalDaysMapping, SourceWindowMapping
from backfill_platform.pipeline.spark_asset import partitioned_spark_asset
from backfill_platform.pipeline.tables.dataset_tables import (
    conform,
    ensure_dataset_table,
    read_range,
    table_partition,
)
from backfill_platform.pipeline.validation.fingerprints import Fingerprint, fingerprints_from_buckets
from backfill_platform.pipeline.validation.shadow_validation import ShadowValidation
from backfill_platform.pipeline.validation.snapshot_figures import table_figures
from backfill_platform.pipeline.validation.verdicts import partition_outcomes
from backfill_platform.specs.dataset import DatasetSpec, SourceInput
from backfill_platform.specs.durations import format_duration
from backfill_platform.specs.grain import Grain
from backfill_platform.specs.stream import StreamSpec


def build_shadow_asset(
    spec: DatasetSpec,
    sources: Sequence[StreamSpec],
    version: str,
    automation_condition: AutomationCondition | None = None,
) -> AssetsDefinition:
    """The shadow of one version; `sources` are the dataset's source streams (one or each it declares)."""
    key = shadow_key(spec, version)
    by_name = {s.name: s for s in sources}
    primary = by_name[spec.primary_stream]
    version_spec = spec.versions[version]
    # Resolved when definitions load, so a mistyped transform fails there, naming the dataset.
    transform = version_spec.load_transform()
    is_active = version == spec.active_version

    @partitioned_spark_asset(
        key,
        primary,
        partitions=dataset_partitions(spec, primary),
        deps=[source_dep(source, by_name[source.stream], spec.grain) for source in spec.inputs],
        checks={**CHECK_DESCRIPTIONS, ERASURE_HONORED: SHADOW_DESCRIPTION},
        # Divergence only warns unless the run sets a bound (`max_divergence_ratio`): a re-derived day is
        # expected to differ from production. Declared non-blocking, it shows so in the UI, and the daily
        # refresh's production condition (`all_deps_blocking_checks_passed`) leaves its warnings aside.
        warning_checks={DIVERGENCE},
        automation_condition=automation_condition,
        # Other versions sit in a group of their own, out of the production path's "Materialize all".
        group_name=spec.name if is_active else f"{spec.name}_other_versions",
        owner=spec.owner,
        description=_description(spec, version),
        metadata={"table": f"{SHADOW_NAMESPACE}.{spec.shadow_table(version)}", "version": version},
    )
    def _shadow(
        context: AssetExecutionContext, config: ShadowConfig, spark: SparkIcebergResource
    ) -> Iterator:
        session = spark.spark_session
        start, end, days = window_partitions(context)
        told = step_settings(context, config)
        _require_events(session, sources)
        # Pinned: the transform and the expectations it is checked against see the same events.
        reads = {i.stream: read_source(session, i, by_name[i.stream], start, end) for i in spec.inputs}
        judged = judge_inputs(session, spec, reads, days)
        # Persisted: the range check before the write and the write itself must not run the transform twice.
        frames = {name: read.events for name, read in reads.items()}
        output = conform(spec.apply_transform(transform, frames), spec, version).persist()
        target = shadow_table(session, spec, version)
        ensure_dataset_table(session, spec, target)
        properties = {**run_properties(context), VERSION: version, **honored_requests(session, sources)}
        try:
            bounds = spec.partition_bounds(start, end)
            snapshot = replace_range(output, target, spec.partition_column, *bounds, properties)
        finally:
            output.unpersist()

        failpoint(SHADOW_BEFORE_CHECKS)
        shadow = read_range(session, target, spec, start, end, snapshot)
        # Computed once at this snapshot; promotion in this run gates and verifies against the same.
        actual = table_figures(session, target, spec, start, end, snapshot)
        production = read_range(session, production_table(session, spec), spec, start, end)
        validation = validate_shadow(
            spec, version, judged, shadow, actual, production, days, told.max_divergence_ratio
        )
        validation.verdicts += shadow_erasure_verdicts(
            session, spec, sources, shadow, table_partition(spec), frames, days
        )
        fingerprints = fingerprints_from_buckets(actual, days)
        record_validation(session, context, spec, version, snapshot, validation, fingerprints, judged)
        yield from partition_outcomes(
            context,
            key,
            validation.verdicts,
            day_metadata(spec, validation, fingerprints),
            {"table": target, "snapshot_id": str(snapshot), "check_digest": validation.digest},
            told.per_partition,
        )

    return _shadow


def _description(spec: DatasetSpec, version: str) -> str:
    version_spec = spec.versions[version]
    active = " (active: feeds production)" if version == spec.active_version else ""
    reads_text = ", ".join(
        f"`{i.stream}`" + (f" (from {format_duration(i.lookback)} before each day)" if i.lookback else "")
        for i in spec.inputs
    )
    return (
        f"Shadow of `{spec.name}` computed by version **{version}**{active}: "
        f"{version_spec.description} Transform `{version_spec.transform}` over the events of "
        f"{reads_text}, written to "
        f"`{SHADOW_NAMESPACE}.{spec.shadow_table(version)}` (range replaced in one commit), then "
        f"checked day by day, per {spec.bucket} bucket, against the events. Consumers never read it; "
        + (
            "production is promoted from it."
            if active
            else f"production is promoted from the active version's shadow ({spec.active_version}), "
            "not from this one."
        )
        + local_days_note(spec)
    )


def _require_events(session: Any, sources: Sequence[StreamSpec]) -> None:
    """Fail naming the events asset to materialize first when a source's events table does not exist."""
    for stream in sources:
        if not table_exists(session, events_table(session, stream)):
            raise Failure(
                f"{events_table(session, stream)} does not exist yet: materialize "
                f"{events_key(stream).to_user_string()} first"
            )


def source_dep(source: SourceInput, stream: StreamSpec, grain: Grain) -> AssetDep:
    """A source's events feed the shadow partition by partition; with a lookback, partition P also reads
    those before it that the lookback reaches into (D-1 for a lookback up to a day): exact in the code
    location (see `lookback_mapping` for what asset backfills see). A dataset of another grain than its
    source (days over hours, local days) reads the source partitions its interval overlaps
    (`source_window_mapping`)."""
    if grain.local:
        # Across time zones: what Dagster's webserver and daemon can walk (`LocalDaysMapping`).
        return AssetDep(events_key(stream), partition_mapping=LocalDaysMapping(source.lookback))
    if grain != stream.grain:
        return AssetDep(events_key(stream), partition_mapping=SourceWindowMapping(source.lookback))
    if not source.partitions_back(grain):
        return AssetDep(events_key(stream))
    return AssetDep(events_key(stream), partition_mapping=LookbackMapping(source.partitions_back(grain)))


def day_metadata(
    spec: DatasetSpec, validation: ShadowValidation, fingerprints: dict[str, Fingerprint]
) -> dict[str, dict]:
    """Per-day numbers (rows, sums, divergence, verdict) that the UI plots across partitions."""
    # Grouped once: a year's range has thousands of buckets and verdicts, and each day needs its own.
    by_day: dict[str, list] = {}
    for bucket, figures in validation.actual.items():
        by_day.setdefault(bucket[0], []).append(figures)
    failed = validation.failed
    result = {}
    for day in validation.days:
        sums = {
            f"sum_{rule.column}": sum(f.sums[rule.column] for f in by_day.get(day, []))
            for rule in spec.reconciliation
        }
        result[day] = {
            **fingerprints[day].metadata(),
            **sums,
            "diverging_rows": validation.divergence.partitions[day].diverging,
            "checks_passed": day not in failed,
            "failed_checks": ", ".join(failed.get(day, [])) or "none",
        }
    return result
