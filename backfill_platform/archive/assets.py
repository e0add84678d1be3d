"""The archive asset: an observable source, partitioned by ingestion hour."""

from collections import defaultdict
from datetime import UTC, datetime

from dagster import (
    AssetKey,
    AssetsDefinition,
    DataVersion,
    DataVersionsByPartition,
    observable_source_asset,
)

from backfill_platform.archive.listing import archive_for, list_files, manifest_fingerprint
from backfill_platform.partitions import ingestion_partitions
from backfill_platform.specs.stream import StreamSpec


def archive_key(spec: StreamSpec) -> AssetKey:
    return AssetKey(["archive", spec.name])


def build_archive_asset(spec: StreamSpec) -> AssetsDefinition:
    partitions = ingestion_partitions(spec)

    @observable_source_asset(
        key=archive_key(spec),
        partitions_def=partitions,
        group_name=spec.name,
        owners=[spec.owner],
        description=(
            f"Raw `{spec.name}` archive as delivered: {spec.archive.format} files "
            f"({spec.archive.compression}) in hourly ingestion folders `{spec.archive.layout}` under "
            f"`{spec.archive.location}`. Immutable input. An observation records each hour's manifest; its "
            "data version changes when a file is added or replaced, which makes the affected event days stale."
        ),
        metadata={"layout": spec.archive.layout, "location": spec.archive.location},
    )
    def _archive(context) -> DataVersionsByPartition:
        first = partitions.start
        files = list_files(archive_for(spec), first, datetime.now(UTC))
        by_hour = defaultdict(list)
        for f in files:
            by_hour[f.ingestion_hour.strftime("%Y-%m-%d-%H:%M")].append(f)
        versions = {hour: DataVersion(manifest_fingerprint(fs)) for hour, fs in by_hour.items()}
        context.log.info(
            f"{spec.name} archive: {len(files)} files, {sum(f.size for f in files):,} bytes "
            f"in {len(by_hour)} ingestion hours"
        )
        return DataVersionsByPartition(versions)

    return _archive
