"""What an events run read: the per-day record the daily refresh compares with the archive.

The events step records, per day it committed, the *read version* of the files it listed (the
fingerprint of the manifest fingerprints of the ingestion hours of the day's read window) and when it
listed them: an observation of the events asset whose data version is `<read version>@<epoch seconds>`,
the only tag Dagster indexes per partition. `orchestration/automation/read_versions.py` compares it with
the archive as observed after that listing.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Iterator
from datetime import datetime

from dagster import AssetKey, AssetObservation, DagsterEventType, DagsterInstance

from backfill_platform.dagster_internals import DATA_VERSION_TAG
from backfill_platform.pipeline.archive.listing import ArchiveFile, manifest_fingerprint
from backfill_platform.pipeline.hour_mapping import ReadPlan, ReadWindow
from backfill_platform.pipeline.partitions import HOUR_KEY
from backfill_platform.specs.stream import StreamSpec


def read_version(hour_versions: dict[str, str], window_hours: Iterable[str]) -> str:
    """The fingerprint of the hours a day reads: hours without files (no version) count as empty."""
    digest = hashlib.sha256()
    for hour in sorted(window_hours):
        digest.update(f"{hour}={hour_versions.get(hour, '')}\n".encode())
    return digest.hexdigest()[:16]


def window_hours(spec: StreamSpec, partition: str) -> list[str]:
    """The ingestion hours (keys) the partition `partition` (a day's or an hour's key) reads, asked of one
    partition outside a run (the daily refresh compares them with the archive)."""
    return _hour_keys(ReadWindow.of(spec, *spec.grain.bounds(partition)))


def _hour_keys(window: ReadWindow) -> list[str]:
    return [h.strftime(HOUR_KEY) for h in window.hours()]


def read_observations(
    key: AssetKey, plan: ReadPlan, files: list[ArchiveFile], days: Iterable[str], listed_at: datetime
) -> Iterator[AssetObservation]:
    """One observation per committed day (of the run's `plan`): the read version of the files the run
    listed, and when."""
    for day, version in day_read_versions(plan, files, days).items():
        yield AssetObservation(
            asset_key=key,
            partition=day,
            tags={DATA_VERSION_TAG: encode_read(version, listed_at)},
            metadata={"archive_read_version": version},
        )


def day_read_versions(plan: ReadPlan, files: list[ArchiveFile], days: Iterable[str]) -> dict[str, str]:
    """Each day's read version of `files` (a listing that covers the read windows of the days, partitions
    of `plan`)."""
    by_hour: dict[str, list[ArchiveFile]] = defaultdict(list)
    for f in files:
        by_hour[f.ingestion_hour.strftime(HOUR_KEY)].append(f)
    versions = {hour: manifest_fingerprint(fs) for hour, fs in by_hour.items()}
    return {day: read_version(versions, _hour_keys(plan.partitions[day])) for day in days}


def recorded_read_versions(instance: DagsterInstance, key: AssetKey, days: list[str]) -> dict[str, str]:
    """The read version each day's latest events run recorded (days without a recorded read left out)."""
    tags = instance.event_log_storage.get_latest_tags_by_partition(
        key, DagsterEventType.ASSET_OBSERVATION, [DATA_VERSION_TAG], days
    )
    reads = {day: decode_read(t[DATA_VERSION_TAG]) for day, t in tags.items() if DATA_VERSION_TAG in t}
    return {day: read[0] for day, read in reads.items() if read}


def encode_read(version: str, listed_at: datetime) -> str:
    """The data version an events day records: its read version and when the run listed the archive."""
    return f"{version}@{listed_at.timestamp():.3f}"


def decode_read(value: str) -> tuple[str, float] | None:
    """`(read version, epoch seconds)` of a recorded read; None for other data versions of the asset."""
    version, _, at = value.partition("@")
    return (version, float(at)) if at else None
