"""Partitions, declared once: event-time partitions for tables, ingestion hours for archives.

A stream's events and every dataset over it are partitioned by its grain (`specs.grain`): UTC days
(`2026-10-01`) or UTC hours (`2026-10-01-14:00`), one-to-one with Iceberg `days(...)` / `hours(...)`
partitions; everything else imports these definitions.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

from dagster import (
    AssetExecutionContext,
    BackfillPolicy,
    DailyPartitionsDefinition,
    Failure,
    HourlyPartitionsDefinition,
    TimeWindowPartitionsDefinition,
)
from pyspark.sql import Column
from pyspark.sql import functions as F

from backfill_platform.dagster_internals import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
    PARTITION_NAME_TAG,
)
from backfill_platform.specs.dataset import DatasetSpec
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


def dataset_partitions(dataset: DatasetSpec, stream: StreamSpec) -> TimeWindowPartitionsDefinition:
    """A dataset's partitions: its primary stream's when of its grain, else days of its time zone, from the
    first whose start is not before the stream's first partition (east of UTC, the stream's first local day
    starts before it and would be partial)."""
    grain = dataset.grain
    if grain == stream.grain:
        return event_partitions(stream)
    first = stream.first_partition
    if grain.start(first) < midnight(first):
        first += DAY
    return DailyPartitionsDefinition(start_date=first.isoformat(), timezone=grain.zone)


def local_days_note(dataset: DatasetSpec) -> str:
    """What an asset's description tells a UI user of a dataset of local days (empty for UTC ones): its days
    are read from UTC partitions exactly in runs, while Dagster's webserver and daemon see a coarser
    dependency (`source_window_mapping.LocalDaysMapping`), which changes what a mixed backfill waits for."""
    if not dataset.grain.local:
        return ""
    zone = dataset.grain.zone
    return (
        f" Its days are the days of {zone} (23, 24 or 25 hours), each read from exactly the UTC partitions it "
        "overlaps. Dagster's webserver and daemon, which cannot map across time zones, see every source "
        "partition feeding every local day: a range of these days backfills from the UI as any other, and "
        "a backfill that also selects the source's partitions runs these days after all of them."
    )


def ingestion_partitions(spec: StreamSpec) -> HourlyPartitionsDefinition:
    # The first event day can be fed by files ingested the hour before it (producers' clock skew).
    first = midnight(spec.first_partition) - DAY
    return HourlyPartitionsDefinition(start_date=first.strftime(HOUR_KEY), timezone="UTC")


def partition_of(grain: Grain, column: str | Column) -> Column:
    """The partition of each row's `column` (a timestamp): a date for days (cheap to group by), the
    partition key for hours. `Grain.value_key` turns a collected value into the key."""
    if grain.unit == "hour":
        return F.date_format(F.date_trunc("hour", column), grain.spark_key_format)
    if grain.local:
        return F.to_date(F.from_utc_timestamp(column, grain.zone))
    return F.to_date(column)


def backfill_policy(max_partitions_per_run: int | None) -> BackfillPolicy:
    """One Spark run for a whole range unless the spec bounds the blast radius of a run."""
    if max_partitions_per_run:
        return BackfillPolicy.multi_run(max_partitions_per_run)
    return BackfillPolicy.single_run()


def days_between(start: date, end: date) -> list[date]:
    """The days d with start <= d < end."""
    return [start + i * DAY for i in range((end - start).days)]


def window_partitions(context: AssetExecutionContext) -> tuple[datetime, datetime, list[str]]:
    """The run's range: its first partition's start, its last partition's end, and every partition key.
    Refuses a run whose partition tags are not keys of this asset's partitions (`run_partitions_are_mine`)."""
    run_partitions_are_mine(context)
    window = context.partition_time_window
    return window.start.astimezone(UTC), window.end.astimezone(UTC), sorted(context.partition_keys)


def run_partitions_are_mine(context: AssetExecutionContext) -> None:
    """Refuse a run whose partition tags name partitions of another kind than this asset's.

    Dagster reads a run's partition tags with each asset's own key format. A daily format reads an hour
    key's `-04:00` as a UTC offset: a run of hours that also selects a daily asset would derive days for
    it, some of them from hours the run never had. Such a run (hours and days selected together, launched
    outside `backfill` and the refresh, which run each kind apart) is refused by the daily asset before it
    reads anything. (The other way round, day tags for an hourly asset, Dagster refuses at launch: an
    hourly format cannot read a day.)"""
    tags = context.run.tags
    # As Dagster reads them: one partition's tag first, else the range's.
    if PARTITION_NAME_TAG in tags:
        asked = [tags[PARTITION_NAME_TAG]]
    else:
        asked = [
            tags[t] for t in (ASSET_PARTITION_RANGE_START_TAG, ASSET_PARTITION_RANGE_END_TAG) if t in tags
        ]
    if not asked:
        return
    try:
        keys = sorted(context.partition_keys)
    except ValueError:  # Dagster's own parse of the tags with this asset's format
        keys = []
    derived = [keys[0], keys[-1]][: len(asked)] if keys else []
    if asked != derived:
        kind = (
            "hours" if isinstance(context.assets_def.partitions_def, HourlyPartitionsDefinition) else "days"
        )
        read_as = f" (Dagster read them as {'..'.join(derived)})" if derived else ""
        raise Failure(
            description=(
                f"{context.assets_def.key.to_user_string()}: this run's partitions {'..'.join(asked)} are "
                f"not {kind} of this asset{read_as}. A run holds one kind of partition: run the hours and "
                "the days in runs of their own (`backfill-platform backfill` and the refresh do)."
            )
        )
