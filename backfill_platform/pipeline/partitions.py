"""Partitions, declared once: event-time partitions for tables, ingestion hours for archives.

A stream's events and every dataset over it are partitioned by its grain (`specs.grain`): UTC days
(`2026-10-01`) or UTC hours (`2026-10-01-14:00`), one-to-one with Iceberg `days(...)` / `hours(...)`
partitions; everything else imports these definitions.
"""

from __future__ import annotations

from datetime import date, datetime

from dagster import (
    AssetExecutionContext,
    BackfillPolicy,
    DailyPartitionsDefinition,
    HourlyPartitionsDefinition,
    TimeWindowPartitionsDefinition,
)
from pyspark.sql import Column
from pyspark.sql import functions as F

from backfill_platform.specs.durations import DAY, midnight
from backfill_platform.specs.grain import Grain
from backfill_platform.specs.stream import StreamSpec

# The key format of the archive's hourly ingestion partitions.
HOUR_KEY = "%Y-%m-%d-%H:%M"


def event_partitions(spec: StreamSpec) -> TimeWindowPartitionsDefinition:
    """The stream's event-time partitions: days or hours (UTC) from its first partition's midnight."""
    if spec.grain.unit == "hour":
        return HourlyPartitionsDefinition(
            start_date=midnight(spec.first_partition).strftime(HOUR_KEY), timezone="UTC"
        )
    return DailyPartitionsDefinition(start_date=spec.first_partition.isoformat(), timezone="UTC")


def ingestion_partitions(spec: StreamSpec) -> HourlyPartitionsDefinition:
    # The first event day can be fed by files ingested the hour before it (producers' clock skew).
    first = midnight(spec.first_partition) - DAY
    return HourlyPartitionsDefinition(start_date=first.strftime(HOUR_KEY), timezone="UTC")


def partition_of(grain: Grain, column: str | Column) -> Column:
    """The partition of each row's `column` (a timestamp): a date for days (cheap to group by), the
    partition key for hours. `Grain.value_key` turns a collected value into the key."""
    if grain.unit == "day":
        return F.to_date(column)
    return F.date_format(F.date_trunc("hour", column), grain.spark_key_format)


def backfill_policy(max_partitions_per_run: int | None) -> BackfillPolicy:
    """One Spark run for a whole range unless the spec bounds the blast radius of a run."""
    if max_partitions_per_run:
        return BackfillPolicy.multi_run(max_partitions_per_run)
    return BackfillPolicy.single_run()


def days_between(start: date, end: date) -> list[date]:
    """The days d with start <= d < end."""
    return [start + i * DAY for i in range((end - start).days)]


def window_partitions(context: AssetExecutionContext) -> tuple[datetime, datetime, list[str]]:
    """The run's range: its first partition's start, its last partition's end, and every partition key."""
    window = context.partition_time_window
    return window.start, window.end, sorted(context.partition_keys)
