"""Partitions, declared once: event-time days for tables, ingestion hours for archives.

Dagster partition keys are UTC days (`2026-10-01`) and map one-to-one to Iceberg `days(...)` / DATE
partitions; everything else imports these definitions.
"""

from __future__ import annotations

from datetime import date

from dagster import (
    AssetExecutionContext,
    BackfillPolicy,
    DailyPartitionsDefinition,
    HourlyPartitionsDefinition,
)

from backfill_platform.specs.durations import DAY, midnight
from backfill_platform.specs.stream import StreamSpec

# The key format of the archive's hourly ingestion partitions.
HOUR_KEY = "%Y-%m-%d-%H:%M"


def event_partitions(spec: StreamSpec) -> DailyPartitionsDefinition:
    return DailyPartitionsDefinition(start_date=spec.first_partition.isoformat(), timezone="UTC")


def ingestion_partitions(spec: StreamSpec) -> HourlyPartitionsDefinition:
    # The first event day can be fed by files ingested the hour before it (producers' clock skew).
    first = midnight(spec.first_partition) - DAY
    return HourlyPartitionsDefinition(start_date=first.strftime(HOUR_KEY), timezone="UTC")


def backfill_policy(max_partitions_per_run: int | None) -> BackfillPolicy:
    """One Spark run for a whole range unless the spec bounds the blast radius of a run."""
    if max_partitions_per_run:
        return BackfillPolicy.multi_run(max_partitions_per_run)
    return BackfillPolicy.single_run()


def days_between(start: date, end: date) -> list[date]:
    """The days d with start <= d < end."""
    return [start + i * DAY for i in range((end - start).days)]


def window_days(context: AssetExecutionContext) -> tuple[date, date, list[str]]:
    """The run's range of days: first day, the day after the last, and every day's partition key."""
    window = context.partition_time_window
    start, end = window.start.date(), window.end.date()
    return start, end, sorted(context.partition_keys)
