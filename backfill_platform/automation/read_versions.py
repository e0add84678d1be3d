"""What an events day read, compared with the archive as last observed: the level trigger of a late file.

An observation gives every ingestion hour with files a data version (its manifest fingerprint). A day's
*read version* is the fingerprint of the versions of the hours of its read window. The events step
records, per day it committed, the read version of the files it listed and when it listed them (an
observation of the events asset, its data version `<read version>@<epoch seconds>`: the only tag
Dagster indexes per partition). `ArchiveReadChanged` is true for a day whose recorded read differs from
the archive as observed *after* that listing.

Why a comparison and not Dagster's "an archive hour was newly updated": an edge seen while the day's
run is in flight is reset by that run's materialization, although the run listed the archive before the
file arrived, so the late file would never be read; and the first observation of an archive gives every
hour a first version, which re-derived every day of the horizon although none had changed. The
comparison has neither problem: it asks what the day read, not what happened.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime

from dagster import (
    AssetKey,
    AssetObservation,
    AutomationCondition,
    AutomationContext,
    AutomationResult,
    DagsterEventType,
    DagsterInstance,
)
from dagster._core.definitions.data_version import DATA_VERSION_TAG

from backfill_platform.archive.listing import ArchiveFile, hours, manifest_fingerprint
from backfill_platform.automation.mapping import ArchiveReadWindowMapping
from backfill_platform.partitions import DAY, HOUR_KEY
from backfill_platform.specs.stream import StreamSpec


def read_version(hour_versions: dict[str, str], window_hours: Iterable[str]) -> str:
    """The fingerprint of the hours a day reads: hours without files (no version) count as empty."""
    digest = hashlib.sha256()
    for hour in sorted(window_hours):
        digest.update(f"{hour}={hour_versions.get(hour, '')}\n".encode())
    return digest.hexdigest()[:16]


def window_hours(spec: StreamSpec, day_start: datetime) -> list[str]:
    low, high = ArchiveReadWindowMapping.for_stream(spec).hours_window(day_start, day_start + DAY)
    return [h.strftime(HOUR_KEY) for h in hours(low, high)]


def read_observations(
    key: AssetKey, spec: StreamSpec, files: list[ArchiveFile], days: Iterable[str], listed_at: datetime
) -> Iterator[AssetObservation]:
    """One observation per committed day: the read version of the files the run listed, and when."""
    by_hour: dict[str, list[ArchiveFile]] = defaultdict(list)
    for f in files:
        by_hour[f.ingestion_hour.strftime(HOUR_KEY)].append(f)
    versions = {hour: manifest_fingerprint(fs) for hour, fs in by_hour.items()}
    for day in days:
        version = read_version(versions, window_hours(spec, _midnight(day)))
        yield AssetObservation(
            asset_key=key,
            partition=day,
            tags={DATA_VERSION_TAG: f"{version}@{listed_at.timestamp():.3f}"},
            metadata={"archive_read_version": version},
        )


class ArchiveReadChanged(AutomationCondition[AssetKey]):
    """True for the days whose recorded read differs from the archive as observed after it was read."""

    def __init__(self, spec: StreamSpec, archive: AssetKey):
        self.spec = spec
        self.archive = archive

    @property
    def name(self) -> str:
        return "archive read changed"

    @property
    def description(self) -> str:
        return "The archive hours this day reads, as last observed, differ from what its events run read"

    @property
    def requires_cursor(self) -> bool:
        return False

    def evaluate(self, context: AutomationContext) -> AutomationResult:
        instance = context.asset_graph_view.instance
        recorded = recorded_reads(context)
        last = instance.fetch_observations(self.archive, limit=1).records if recorded else []
        # Only days read before the archive's last observation can be compared with it.
        comparable = {
            day: version for day, (version, at) in recorded.items() if last and at < last[0].timestamp
        }
        windows = {day: window_hours(self.spec, _midnight(day)) for day in comparable}
        needed = sorted({hour for hours_ in windows.values() for hour in hours_})
        observed = _latest_versions(instance, self.archive, needed) if needed else {}
        changed = {
            day for day, version in comparable.items() if read_version(observed, windows[day]) != version
        }
        return AutomationResult(
            context=context,
            true_subset=context.candidate_subset.compute_intersection_with_partition_keys(changed),
        )


class HasReadRecord(AutomationCondition[AssetKey]):
    """True for the days whose events run recorded what it read (every run of this platform version)."""

    @property
    def name(self) -> str:
        return "read recorded"

    @property
    def requires_cursor(self) -> bool:
        return False

    def evaluate(self, context: AutomationContext) -> AutomationResult:
        return AutomationResult(
            context=context,
            true_subset=context.candidate_subset.compute_intersection_with_partition_keys(
                set(recorded_reads(context))
            ),
        )


def recorded_reads(context: AutomationContext) -> dict[str, tuple[str, float]]:
    """The candidate days' latest recorded reads: day -> (read version, when the run listed the archive)."""
    days = sorted(context.candidate_subset.expensively_compute_partition_keys())
    versions = _latest_versions(context.asset_graph_view.instance, context.key, days) if days else {}
    reads = {}
    for day, value in versions.items():
        version, _, at = value.partition("@")
        if at:  # other data versions of the events asset are not reads
            reads[day] = (version, float(at))
    return reads


def _latest_versions(instance: DagsterInstance, key: AssetKey, partitions: list[str]) -> dict[str, str]:
    """The latest observed data version of each partition (one query: Dagster indexes this tag)."""
    tags = instance.event_log_storage.get_latest_tags_by_partition(
        key, DagsterEventType.ASSET_OBSERVATION, [DATA_VERSION_TAG], partitions
    )
    return {partition: t[DATA_VERSION_TAG] for partition, t in tags.items() if DATA_VERSION_TAG in t}


def _midnight(day: str) -> datetime:
    return datetime.fromisoformat(day).replace(tzinfo=UTC)
