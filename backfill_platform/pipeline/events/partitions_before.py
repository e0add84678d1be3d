"""The partitions before a dataset backfill's range that it reads through a lookback: ingest them, or validate.

Partition P of a join reads a source from `P start - lookback`: the first partition of a backfilled range
reads the tail of the source's partitions before it. A partition here is one of the stream's grain (a
day, or an hour of an hourly stream). A backfill of the dataset asks each such source's events step (run
tag `backfill_platform/partitions_before`, set by `backfill-platform backfill --dataset`) to take care
of those partitions in the same run:

- a partition already ingested whose checks passed (settled, not provisional) and whose archive read
  window holds exactly the files its ingestion listed is **validated as it is**: not re-derived, its
  events and its ledger row stay (the backfill's report says it was read but not re-derived);
- any other partition (never ingested, failed, provisional, or a file of its window added, replaced or
  removed since) is **ingested** by the run, with its own checks and figures, as one of the range is.

The partitions to ingest extend the step's window: they are those from the earliest one that must be
ingested up to the range, so that the step still writes one contiguous window in one commit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from dagster import AssetKey, DagsterInstance
from pyspark.sql import SparkSession

from backfill_platform.pipeline.archive.listing import ArchiveFile
from backfill_platform.pipeline.events.read_record import day_read_versions, recorded_read_versions
from backfill_platform.pipeline.hour_mapping import ReadPlan
from backfill_platform.pipeline.ledger.ledger import latest_ingestions
from backfill_platform.specs.stream import StreamSpec


@dataclass(frozen=True)
class PartitionsBefore:
    """The partitions of the stream's grain before a run's range that a dataset's lookback reads, and what
    the run does with them."""

    ingest: list[str] = field(default_factory=list)  # ingested by this run (they extend its window)
    as_they_are: dict[str, str] = field(default_factory=dict)  # partition -> why it is read, not re-derived

    def log_line(self, stream: str) -> str:
        parts = [f"ingested by this run: {', '.join(self.ingest)}"] if self.ingest else []
        parts += [f"{key} read as it is ({why})" for key, why in sorted(self.as_they_are.items())]
        return f"{stream} partitions before the range that a dataset's lookback reads: " + "; ".join(parts)


def partitions_before(
    instance: DagsterInstance,
    session: SparkSession,
    key: AssetKey,
    spec: StreamSpec,
    files: list[ArchiveFile],
    plan: ReadPlan,
    start: datetime,
) -> PartitionsBefore:
    """What the run does with the partitions of `plan` (its read windows, from as far back as the lookback
    reads) that start before `start`, the range's start (none before the stream's first partition);
    `files` is the run's listing of the archive, which covers their read windows."""
    partitions = [
        partition
        for partition, window in plan.partitions.items()
        if plan.stream_start <= window.start < start
    ]
    if not partitions:
        return PartitionsBefore()
    ingested = latest_ingestions(session, spec.name, partitions)
    recorded = recorded_read_versions(instance, key, partitions)
    now = day_read_versions(plan, files, partitions)
    why_ingest: dict[str, str] = {}
    for partition in partitions:
        row = ingested.get(partition)
        if row is None:
            why_ingest[partition] = "never ingested"
        elif not row["checks_passed"]:
            why_ingest[partition] = f"failed {row['failed_checks']}"
        elif row.get("provisional"):
            why_ingest[partition] = "provisional"
        elif recorded.get(partition) != now[partition]:
            why_ingest[partition] = "its archive read window changed since it was ingested"
    unchanged = {
        p: f"ingested in run {ingested[p]['run_id']}, unchanged" for p in partitions if p not in why_ingest
    }
    if not why_ingest:
        return PartitionsBefore(as_they_are=unchanged)
    first = min(why_ingest)
    return PartitionsBefore(
        ingest=[p for p in partitions if p >= first],
        as_they_are={p: why for p, why in unchanged.items() if p < first},
    )
