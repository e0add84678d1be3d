"""The archive asset: an observable source, partitioned by ingestion hour."""

from collections import defaultdict
from datetime import datetime

from dagster import (
    AssetsDefinition,
    AutomationCondition,
    DataVersion,
    DataVersionsByPartition,
    observable_source_asset,
)

from backfill_platform import settings
from backfill_platform.pipeline.archive.listing import list_files, manifest_fingerprint
from backfill_platform.pipeline.archive.stream_archive import archive_for
from backfill_platform.pipeline.hour_mapping import ArchiveReadWindowMapping, ReadWindow
from backfill_platform.pipeline.names import archive_key
from backfill_platform.pipeline.partitions import HOUR_KEY, ingestion_partitions
from backfill_platform.specs.durations import DAY, HOUR
from backfill_platform.specs.stream import StreamSpec

OBSERVE_ALL_TAG = "backfill_platform/observe_all"


def build_archive_asset(
    spec: StreamSpec, automation_condition: AutomationCondition | None = None
) -> AssetsDefinition:
    partitions = ingestion_partitions(spec)

    @observable_source_asset(
        key=archive_key(spec),
        partitions_def=partitions,
        group_name=spec.name,
        owners=[spec.owner],
        description=_description(spec),
        metadata=(
            {"iceberg_table": spec.archive.iceberg_table, "ingestion_time": spec.archive.ingestion_time}
            if spec.archive.iceberg_table
            else {"layout": spec.archive.layout, "location": spec.archive.location}
        ),
        automation_condition=automation_condition,
    )
    def _archive(context) -> DataVersionsByPartition:
        now = settings.now()
        full = context.run.tags.get(OBSERVE_ALL_TAG) == "true" or not _observed(context)
        first = observation_start(spec, partitions.start, now, full)
        archive = archive_for(spec)
        files = list_files(archive, first, now)
        by_hour = defaultdict(list)
        for f in files:
            by_hour[f.ingestion_hour.strftime(HOUR_KEY)].append(f)
        versions = {hour: DataVersion(manifest_fingerprint(fs)) for hour, fs in by_hour.items()}
        held = (
            f"table {spec.archive.iceberg_table} at snapshot {files[0].snapshot_id}: "
            f"{sum(f.rows or 0 for f in files):,} rows"
            if spec.archive.iceberg_table and files
            else f"{len(files)} files"
        )
        context.log.info(
            f"{spec.name} archive: {held}, {sum(f.size for f in files):,} bytes "
            f"in {len(by_hour)} ingestion hours since {first:%Y-%m-%d %H:%M}"
        )
        for removal in archive.removals:
            # Never followed (the rows a day was built from stay its rows until it is re-derived on
            # purpose), never silent.
            days = "the event days reading them"
            if removal.hours:
                low, high = ArchiveReadWindowMapping.for_stream(spec).days_window(
                    min(removal.hours), max(removal.hours) + HOUR
                )
                grain = spec.grain
                days = (
                    f"the event {grain.plural} {grain.key(low)} to {grain.key(high - grain.length)}, whose read "
                    "windows hold these hours,"
                )
            context.log.warning(
                f"{removal.describe(spec.archive.iceberg_table)}: not treated as new data; {days} keep what "
                "they were built from until they are re-derived on purpose (a backfill of those days reads "
                "the table as it is now)"
            )
        return DataVersionsByPartition(versions)

    return _archive


# Dagster's partition views count materializations only, and an archive is observed, never materialized.
OBSERVED_NOT_MATERIALIZED = (
    " Observed, never materialized: the Partitions tab counts materializations, so it shows this asset as "
    "0% filled whatever the archive holds; the observations, with each ingestion hour's data version, are "
    "in the Events tab."
)


def _description(spec: StreamSpec) -> str:
    return _source_description(spec) + OBSERVED_NOT_MATERIALIZED


def _source_description(spec: StreamSpec) -> str:
    if spec.archive.iceberg_table is not None:
        return (
            f"Raw `{spec.name}` archive as delivered: the Iceberg table `{spec.archive.iceberg_table}`, by "
            f"ingestion hour of `{spec.archive.ingestion_time}`. An observation reads the table's metadata "
            "(no data): an hour's data version is the last append that added rows to it, so a late append "
            "makes the affected event days stale, while a compaction or a snapshot expiry changes nothing; "
            "an overwrite or delete is reported in the observation's log, never followed."
        )
    return (
        f"Raw `{spec.name}` archive as delivered: {spec.archive.format} files "
        f"({spec.archive.compression}) in hourly ingestion folders `{spec.archive.layout}` under "
        f"`{spec.archive.location}`. Immutable input. An observation records each hour's manifest; its "
        "data version changes when a file is added or replaced, which makes the affected event days stale"
        + (
            " (objects' keys, sizes and ETags)."
            if spec.archive.s3 is not None
            else " (files' names, sizes and modification times)."
        )
    )


def observation_start(spec: StreamSpec, first: datetime, now: datetime, full: bool) -> datetime:
    """The first ingestion hour an observation lists.

    The first observation (or one launched with the run tag `backfill_platform/observe_all=true`)
    records every hour. Later ones only the hours that can still change what the daily refresh does —
    the read windows of the days within the refresh horizon — so that an hourly observation of a
    year-old archive writes days' worth of hours, not a year's.
    """
    if full:
        return first
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    first_day = day - spec.refresh_horizon - DAY
    bound = ReadWindow.of(spec, first_day, first_day + DAY).low
    return max(first, bound.replace(minute=0))


def _observed(context) -> bool:
    return bool(context.instance.fetch_observations(context.asset_key, limit=1).records)
