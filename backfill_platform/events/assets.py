"""The events asset of a stream: the archive re-derived into a clean, event-time-partitioned table."""

from dagster import (
    AssetCheckResult,
    AssetCheckSpec,
    AssetDep,
    AssetExecutionContext,
    AssetKey,
    AssetObservation,
    AssetsDefinition,
    MaterializeResult,
    MetadataValue,
    asset,
)
from pyspark.sql import functions as F

from backfill_platform.archive.assets import archive_key
from backfill_platform.archive.listing import archive_for
from backfill_platform.events.checks import (
    DAYS_FAILED_KEY,
    QUARANTINE_RATIO,
    RECONCILIATION,
    RECORDS_PRESENT,
    SCHEMA,
    quarantine_ratio_check,
    reconciliation_check,
    records_present_check,
    schema_check,
)
from backfill_platform.events.ingest import REASONS, IngestResult, events_table, ingest_window
from backfill_platform.lakehouse.resources import SparkIcebergResource
from backfill_platform.lakehouse.tables import RAW_NAMESPACE, in_range
from backfill_platform.ledger.ledger import record_ingestions
from backfill_platform.partitions import archive_to_events_mapping, backfill_policy, event_partitions
from backfill_platform.specs.stream import StreamSpec
from backfill_platform.utils import run_properties
from backfill_platform.validation.checksums import day_fingerprints
from backfill_platform.validation.markdown import markdown_table


def events_key(spec: StreamSpec) -> AssetKey:
    return AssetKey([RAW_NAMESPACE, spec.events_table])


def build_events_asset(spec: StreamSpec) -> AssetsDefinition:
    key = events_key(spec)

    @asset(
        key=key,
        deps=[AssetDep(archive_key(spec), partition_mapping=archive_to_events_mapping(spec))],
        partitions_def=event_partitions(spec),
        backfill_policy=backfill_policy(spec.max_partitions_per_run),
        group_name=spec.name,
        kinds={"spark", "iceberg"},
        owners=[spec.owner],
        description=(
            f"`{spec.name}` events, one row per event id, in Iceberg table `{RAW_NAMESPACE}.{spec.events_table}` "
            "partitioned by event-time day. A day reads every ingestion hour that can hold its events "
            f"(clock skew {spec.clock_skew}, allowed lateness {spec.allowed_lateness}), upcasts every "
            "schema version to the latest, keeps the earliest delivery of each id and sends what cannot be "
            f"parsed or is outside the lateness horizon to `{RAW_NAMESPACE}.{spec.quarantine_table}` with "
            "its reason. Re-running a range replaces exactly that range in one commit."
        ),
        metadata={"table": f"{RAW_NAMESPACE}.{spec.events_table}", "partition_expr": "event_time"},
        check_specs=[
            AssetCheckSpec(
                RECONCILIATION, asset=key, blocking=True, description="read = written + dup + quarantined"
            ),
            AssetCheckSpec(
                QUARANTINE_RATIO, asset=key, blocking=True, description="quarantine under the bound"
            ),
            AssetCheckSpec(SCHEMA, asset=key, blocking=True, description="pandera model of the events"),
            AssetCheckSpec(
                RECORDS_PRESENT, asset=key, blocking=True, description="no day without archive records"
            ),
        ],
    )
    def _events(context: AssetExecutionContext, spark: SparkIcebergResource) -> MaterializeResult:
        session = spark.spark_session
        window = context.partition_time_window
        result = ingest_window(
            session, spec, archive_for(spec), window.start, window.end, run_properties(context)
        )
        for figures in result.partitions.values():
            context.log_event(
                AssetObservation(
                    asset_key=key, partition=figures.partition, metadata=partition_metadata(figures)
                )
            )
        context.log.info(ingest_report(result))
        # Checks and recorded verdicts judge what this run committed: the events at its snapshot.
        written = session.sql(
            f"SELECT * FROM {events_table(session, spec)} VERSION AS OF {result.events_snapshot_id}"
        ).where(in_range("event_time", window.start, window.end))
        fingerprints = day_fingerprints(written, F.to_date("event_time"), sorted(result.partitions))
        rows_by_day = {day: rows for day, (rows, _) in fingerprints.items()}
        checks = [
            reconciliation_check(session, spec, key, result, rows_by_day, window.start, window.end),
            quarantine_ratio_check(spec, key, result),
            schema_check(spec, key, written),
            records_present_check(spec, key, result),
        ]
        # Shadows of later runs only build on days whose events passed these checks, and only while the
        # events are still the ones checked: the verdicts are recorded with the events' fingerprints.
        record_ingestions(
            session,
            spec,
            result,
            context.run.run_id,
            failing_days(checks, list(result.partitions)),
            fingerprints,
        )
        return MaterializeResult(
            metadata={
                "table": events_table(session, spec),
                "snapshot_id": str(result.events_snapshot_id),
                "files": len(result.files),
                "bytes": result.bytes,
                "records": result.records,
                "written": sum(p.written for p in result.partitions.values()),
                "duplicates": sum(p.duplicates for p in result.partitions.values()),
                "quarantined": sum(p.quarantined_total for p in result.partitions.values()),
                "late": sum(p.late for p in result.partitions.values()),
                "duration_s": MetadataValue.float(round(result.seconds, 2)),
                "events_per_s": MetadataValue.float(round(result.events_per_second, 1)),
                "by_partition": MetadataValue.md(ingest_report(result)),
            },
            check_results=checks,
        )

    return _events


def failing_days(checks: list[AssetCheckResult], days: list[str]) -> dict[str, list[str]]:
    """Day -> names of the blocking checks that failed for it (a failed schema check fails every day)."""
    failed: dict[str, list[str]] = {}
    for check in checks:
        if check.passed:
            continue
        named = check.metadata.get(DAYS_FAILED_KEY)
        for day in named.value if named is not None else days:
            failed.setdefault(day, []).append(check.check_name)
    return failed


def partition_metadata(figures) -> dict:
    return {
        "records": figures.records,
        "written": figures.written,
        "duplicates": figures.duplicates,
        "conflicting_ids": figures.conflicting_ids,
        "late": figures.late,
        "quarantined": figures.quarantined_total,
        **{f"quarantined_{reason}": count for reason, count in figures.quarantined.items()},
    }


def ingest_report(result: IngestResult) -> str:
    """Per-partition figures as a markdown table (also what `make demo` prints)."""
    rows = [
        [p.partition, p.records, p.written, p.duplicates, p.quarantined_total, p.late]
        for p in sorted(result.partitions.values(), key=lambda p: p.partition)
    ]
    reasons = {r: sum(p.quarantined[r] for p in result.partitions.values()) for r in REASONS}
    by_reason = ", ".join(f"{r} {n}" for r, n in reasons.items() if n) or "none"
    return (
        markdown_table(["partition", "read", "written", "duplicates", "quarantined", "late"], rows)
        + f"\n\nquarantined by reason: {by_reason}. {len(result.files)} files, {result.bytes:,} bytes, "
        f"{result.seconds:.1f} s, {result.events_per_second:,.0f} events/s"
    )
