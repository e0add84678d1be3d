"""The source days a dataset backfill reads before its range, through a lookback: ingest them, or validate.

Day D of a join reads a source from `D start - lookback`: the first day of a backfilled range reads the
tail of the source's day before it. A backfill of the dataset asks each such source's events step (run
tag `backfill_platform/source_days_before`, set by `backfill-platform backfill --dataset`) to take care
of those days in the same run:

- a day already ingested whose checks passed (settled, not provisional) and whose archive read window
  holds exactly the files its ingestion listed is **validated as it is**: not re-derived, its events and
  its ledger row stay (the backfill's report says it was read but not re-derived);
- any other day (never ingested, failed, provisional, or a file of its window added, replaced or removed
  since) is **ingested** by the run, with its own checks and figures, as a day of the range is.

The days to ingest extend the step's window: they are the days from the earliest one that must be
ingested up to the range, so that the step still writes one contiguous window in one commit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from dagster import AssetKey, DagsterInstance
from pyspark.sql import SparkSession

from backfill_platform.pipeline.archive.listing import ArchiveFile
from backfill_platform.pipeline.events.read_record import day_read_versions, recorded_read_versions
from backfill_platform.pipeline.ledger.ledger import latest_ingestions
from backfill_platform.specs.durations import midnight
from backfill_platform.specs.stream import StreamSpec


@dataclass(frozen=True)
class DaysBefore:
    """The days before a run's range that a dataset's lookback reads, and what the run does with them."""

    ingest: list[str] = field(default_factory=list)  # ingested by this run (they extend its window)
    as_they_are: dict[str, str] = field(default_factory=dict)  # day -> why it is read, not re-derived

    def log_line(self, stream: str) -> str:
        parts = [f"ingested by this run: {', '.join(self.ingest)}"] if self.ingest else []
        parts += [f"{day} read as it is ({why})" for day, why in sorted(self.as_they_are.items())]
        return f"{stream} days before the range that a dataset's lookback reads: " + "; ".join(parts)


def days_before(
    instance: DagsterInstance,
    session: SparkSession,
    key: AssetKey,
    spec: StreamSpec,
    files: list[ArchiveFile],
    start: datetime,
    count: int,
) -> DaysBefore:
    """What the run does with the `count` partitions before `start` (none before the stream's first);
    `files` is the run's listing of the archive, which covers those partitions' read windows."""
    grain, first = spec.grain, midnight(spec.first_partition)
    days = [
        grain.key(start - n * grain.length) for n in range(count, 0, -1) if start - n * grain.length >= first
    ]
    if not days:
        return DaysBefore()
    ingested = latest_ingestions(session, spec.name, days)
    recorded = recorded_read_versions(instance, key, days)
    now = day_read_versions(spec, files, days)
    why_ingest: dict[str, str] = {}
    for day in days:
        row = ingested.get(day)
        if row is None:
            why_ingest[day] = "never ingested"
        elif not row["checks_passed"]:
            why_ingest[day] = f"failed {row['failed_checks']}"
        elif row.get("provisional"):
            why_ingest[day] = "provisional"
        elif recorded.get(day) != now[day]:
            why_ingest[day] = "its archive read window changed since it was ingested"
    if not why_ingest:
        return DaysBefore(
            as_they_are={d: f"ingested in run {ingested[d]['run_id']}, unchanged" for d in days}
        )
    first = min(why_ingest)
    return DaysBefore(
        ingest=[d for d in days if d >= first],
        as_they_are={d: f"ingested in run {ingested[d]['run_id']}, unchanged" for d in days if d < first},
    )
