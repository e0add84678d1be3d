"""What an events day read, compared with the archive as last observed: the level trigger of a late file.

An observation gives every ingestion hour with files a data version (its manifest fingerprint). The events
step records what each day read (`pipeline/events/read_record.py`). `ArchiveReadChanged` is true for a day whose recorded read differs from
the archive as observed *after* that listing.

Why a comparison and not Dagster's "an archive hour was newly updated": an edge seen while the day's
run is in flight is reset by that run's materialization, although the run listed the archive before the
file arrived, so the late file would never be read; and the first observation of an archive gives every
hour a first version, which re-derived every day of the horizon although none had changed. The
comparison has neither problem: it asks what the day read, not what happened.
"""

from __future__ import annotations

from dagster import (
    AssetKey,
    AutomationCondition,
    AutomationContext,
    AutomationResult,
    DagsterEventType,
    DagsterInstance,
)

from backfill_platform.dagster_internals import DATA_VERSION_TAG
from backfill_platform.pipeline.events.read_record import decode_read, read_version, window_hours
from backfill_platform.specs.stream import StreamSpec


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
        if last and not _run_finished(instance, last[0].run_id):
            # An observation in flight has recorded some hours and not yet the others: compared with it,
            # every day reading an hour still unrecorded looks changed (seen in the daemon: 39 hours of an
            # hourly stream re-derived for nothing). It is compared once it has recorded them all.
            last = []
        # Only days read before the archive's last observation can be compared with it.
        comparable = {
            day: version for day, (version, at) in recorded.items() if last and at < last[0].timestamp
        }
        windows = {day: window_hours(self.spec, day) for day in comparable}
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
        read = decode_read(value)
        if read:  # other data versions of the events asset are not reads
            reads[day] = read
    return reads


def _latest_versions(instance: DagsterInstance, key: AssetKey, partitions: list[str]) -> dict[str, str]:
    """The latest observed data version of each partition (one query: Dagster indexes this tag)."""
    tags = instance.event_log_storage.get_latest_tags_by_partition(
        key, DagsterEventType.ASSET_OBSERVATION, [DATA_VERSION_TAG], partitions
    )
    return {partition: t[DATA_VERSION_TAG] for partition, t in tags.items() if DATA_VERSION_TAG in t}


def _run_finished(instance: DagsterInstance, run_id: str) -> bool:
    """Whether the run that recorded an observation has ended (an observation logged outside a run, as
    in-process tests do, counts as ended)."""
    run = instance.get_run_by_id(run_id) if run_id else None
    return run is None or run.is_finished
