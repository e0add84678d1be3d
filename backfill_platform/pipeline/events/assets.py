"""The events asset of a stream: the archive re-derived into a clean, event-time-partitioned table."""

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from dagster import AssetDep, AssetExecutionContext, AssetKey, AssetsDefinition, AutomationCondition
from pyspark.sql import DataFrame

from backfill_platform import settings
from backfill_platform.lakehouse.resources import SparkIcebergResource
from backfill_platform.lakehouse.tables import RAW_NAMESPACE, in_range, read_at
from backfill_platform.pipeline.archive.listing import Archive, ArchiveFile
from backfill_platform.pipeline.archive.stream_archive import archive_for
from backfill_platform.pipeline.erasure.requests import NO_REQUESTS, requests_for
from backfill_platform.pipeline.events.checks import (
    CHECK_DESCRIPTIONS,
    REQUIRED_COLUMNS,
    SETTLED,
    events_schema_check,
    quarantine_ratio_check,
    reconciliation_check,
    records_present_check,
    settled_check,
)
from backfill_platform.pipeline.events.completeness import completeness, topic_edges_lookup
from backfill_platform.pipeline.events.ingest import (
    REASONS,
    IngestResult,
    PartitionFigures,
    ingest_window,
    window_files,
)
from backfill_platform.pipeline.events.partitions_before import PartitionsBefore, partitions_before
from backfill_platform.pipeline.events.read_record import read_observations
from backfill_platform.pipeline.hour_mapping import ArchiveReadWindowMapping, ReadPlan
from backfill_platform.pipeline.ledger.ledger import record_ingestions
from backfill_platform.pipeline.names import archive_key, events_key, events_table
from backfill_platform.pipeline.partitions import partition_of, run_partitions_are_mine
from backfill_platform.pipeline.run_settings import PARTITIONS_BEFORE_TAG, EventsConfig, step_settings
from backfill_platform.pipeline.run_tags import run_properties
from backfill_platform.pipeline.spark_asset import partitioned_spark_asset
from backfill_platform.pipeline.validation.fingerprints import (
    Fingerprint,
    fingerprints_and_nulls_by_partition,
)
from backfill_platform.pipeline.validation.markdown import markdown_table
from backfill_platform.pipeline.validation.verdicts import (
    PartitionVerdict,
    failed_partitions,
    partition_outcomes,
)
from backfill_platform.specs.stream import StreamSpec


def build_events_asset(
    spec: StreamSpec, automation_condition: AutomationCondition | None = None
) -> AssetsDefinition:
    """The stream's events table; `automation_condition` is the daily refresh's (orchestration/)."""
    key = events_key(spec)

    @partitioned_spark_asset(
        key,
        spec,
        deps=[AssetDep(archive_key(spec), partition_mapping=ArchiveReadWindowMapping.for_stream(spec))],
        checks=CHECK_DESCRIPTIONS,
        automation_condition=automation_condition,
        group_name=spec.name,
        owner=spec.owner,
        description=_description(spec),
        metadata={"table": f"{RAW_NAMESPACE}.{spec.events_table}", "partition_expr": "event_time"},
        # Events and quarantine of a window are two commits: one ingestion of a stream at a time, so two
        # overlapping runs never leave a day with one run's events and the other's quarantine.
        pool=f"ingest_{spec.name}",
    )
    def _events(
        context: AssetExecutionContext, config: EventsConfig, spark: SparkIcebergResource
    ) -> Iterator:
        run_partitions_are_mine(context)
        told = step_settings(context, config, spec.name)  # what the run is told (`settings` is the clock)
        listed_at = datetime.now(UTC)  # wall clock, as Dagster's records: before the run lists the archive
        archive = archive_for(spec)
        before_count = told.partitions_before_of(spec.name)
        session, plan, files, before = _what_to_read(context, spark, spec, key, archive, before_count)
        # As of one snapshot of the requests, recorded on the commits and the ledger rows it produced.
        erasure = requests_for(session, spec.name) if spec.subject_field else NO_REQUESTS
        properties = {**run_properties(context), **erasure.property()}
        result = ingest_window(session, spec, archive, plan, properties, files, erasure)
        context.log.info(ingest_report(result))
        if result.unlisted:
            # Not part of any day's figures (no window reads them), but never silently ignored.
            context.log.warning(
                f"{len(result.unlisted)} files under the archive root are in no ingestion hour and are not "
                "read: " + "; ".join(f"{f.name} ({f.lines} lines, {f.why})" for f in result.unlisted[:20])
            )
        days = sorted(result.partitions)
        # Checks and recorded verdicts judge what this run committed: the events at its snapshot.
        written = read_at(session, events_table(session, spec), result.events_snapshot_id).where(
            in_range("event_time", plan.start, plan.end)
        )
        fingerprints, verdicts = _judge(session, spec, plan, result, written, days)
        provisional = [v.partition for v in verdicts if v.check == SETTLED and v.metadata["provisional"]]
        # Shadows of later runs only build on days whose events passed these checks, and only while the
        # events are still the ones checked: the verdicts are recorded with the events' fingerprints.
        failed = failed_partitions(verdicts)
        record_ingestions(
            session, spec, result, context.run.run_id, failed, fingerprints, provisional=provisional
        )
        day_metadata = {
            day: {
                **partition_metadata(result.partitions[day]),
                **fingerprints[day].metadata(),
                "checks_passed": day not in failed,
                "provisional": day in provisional,
            }
            for day in days
        }
        # What each day read, committed or not: the daily refresh compares it with the archive to decide
        # whether a day is behind it, or whether a failed day would only fail again on the same files.
        for observation in read_observations(key, plan, result.files, days, listed_at):
            context.log_event(observation)
        yield from partition_outcomes(
            context,
            key,
            verdicts,
            day_metadata,
            {"table": events_table(session, spec), "snapshot_id": str(result.events_snapshot_id)},
            told.per_partition,
            extra_days=before.ingest,
        )

    return _events


def _description(spec: StreamSpec) -> str:
    return (
        f"`{spec.name}` events, one row per event id, in Iceberg table "
        f"`{RAW_NAMESPACE}.{spec.events_table}` partitioned by event-time day. A day reads every "
        f"ingestion hour that can hold its events (clock skew {spec.clock_skew}, allowed lateness "
        f"{spec.allowed_lateness}), upcasts every schema version to the latest, keeps the earliest "
        "delivery of each id and sends what cannot be parsed or is outside the lateness horizon to "
        f"`{RAW_NAMESPACE}.{spec.quarantine_table}` with its reason. Re-running a range replaces "
        "exactly that range in one commit. Each day is checked on its own; a day is only "
        "materialized once it passed, and only once it is settled (its lateness horizon passed "
        "and no ingestion hour is missing). A dataset backfill whose lookback reads days before its "
        f"range (run tag `{PARTITIONS_BEFORE_TAG}`, or this asset's config `partitions_before`) has "
        "this step ingest them too, in the same run, unless they are already ingested, passed and unchanged."
    )


def _what_to_read(
    context: AssetExecutionContext,
    spark: SparkIcebergResource,
    spec: StreamSpec,
    key: AssetKey,
    archive: Archive,
    before_count: int,
) -> tuple[Any, ReadPlan, list[ArchiveFile], PartitionsBefore]:
    """The session, the run's read windows (its plan, computed here once) and the archive files it reads,
    and the `before_count` partitions before the range it ingests too (a dataset backfill's lookback reads
    them: ingested here unless already good)."""
    window = context.partition_time_window
    # The read windows of the range and of the partitions before it that a lookback may read.
    widest = ReadPlan.for_range(spec, window.start - before_count * spec.grain.length, window.end)
    files = window_files(archive, widest.window)
    # Listed before Spark starts: a run that reads much keeps the JVM's optimizing compiler.
    session = spark.session_for_read(sum(f.size for f in files))
    before = partitions_before(context.instance, session, key, spec, files, widest, window.start)
    if not before_count:
        return session, widest, files, before
    context.log.info(before.log_line(spec.name))
    plan = widest.since(window.start - len(before.ingest) * spec.grain.length)
    read = set(plan.window.hours())
    return session, plan, [f for f in files if f.ingestion_hour in read], before


def _judge(
    session: Any,
    spec: StreamSpec,
    plan: ReadPlan,
    result: IngestResult,
    written: DataFrame,
    days: list[str],
) -> tuple[dict[str, Fingerprint], list[PartitionVerdict]]:
    """Each day's fingerprint of what the run committed (`written`), and every events check's verdicts."""
    # One pass: each day's fingerprint, and the null counts the schema check needs.
    fingerprints, nulls = fingerprints_and_nulls_by_partition(
        written, partition_of(spec.grain, "event_time"), days, list(REQUIRED_COLUMNS)
    )
    rows_by_partition = {day: fingerprint.rows for day, fingerprint in fingerprints.items()}
    proof = completeness(
        spec,
        plan,
        result.files,
        settings.now(),
        result.file_records,
        result.sequence_gaps,
        topic_edges_lookup(spec),
        result.offset_proofs,
    )
    return fingerprints, [
        *reconciliation_check(session, spec, result, rows_by_partition, plan.start, plan.end),
        *quarantine_ratio_check(spec, result),
        *events_schema_check(spec, written, days, nulls),
        *records_present_check(spec, result),
        *settled_check(spec, proof),
    ]


def partition_metadata(figures: PartitionFigures) -> dict:
    """One day's accounting, as the UI plots it across partitions."""
    return {
        "archive_files": figures.archive_files,
        "records": figures.records,
        "written": figures.written,
        "duplicates": figures.duplicates,
        "conflicting_ids": figures.conflicting_ids,
        "late": figures.late,
        "quarantined": figures.quarantined_total,
        "erased": figures.erased,
        **{f"quarantined_{reason}": count for reason, count in figures.quarantined.items()},
    }


def ingest_report(result: IngestResult) -> str:
    """Per-partition figures as a markdown table (also what `make demo` prints)."""
    rows = [
        [p.partition, p.records, p.written, p.duplicates, p.quarantined_total, p.erased, p.late]
        for p in sorted(result.partitions.values(), key=lambda p: p.partition)
    ]
    reasons = {r: sum(p.quarantined[r] for p in result.partitions.values()) for r in REASONS}
    by_reason = ", ".join(f"{r} {n}" for r, n in reasons.items() if n) or "none"
    return (
        markdown_table(["partition", "read", "written", "duplicates", "quarantined", "erased", "late"], rows)
        + f"\n\nquarantined by reason: {by_reason}. {len(result.files)} files, {result.bytes:,} bytes, "
        f"{result.seconds:.1f} s, {result.events_per_second:,.0f} events/s" + _erasure_line(result)
    )


def _erasure_line(result: IngestResult) -> str:
    """What the run honored of the erasure requests (nothing when none was ever filed)."""
    requests = result.erasure
    if requests.snapshot_id is None:
        return ""
    erased = sum(p.erased for p in result.partitions.values())
    return (
        f"\n\nerasure: {erased:,} records of {len(requests.hashes):,} requested subjects erased "
        f"(requests snapshot {requests.snapshot_id})"
    )
