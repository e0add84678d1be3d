"""When is a day's data complete? Its lateness horizon has passed and its archive has no hole.

A day becomes a Dagster partition at midnight, but lines for it keep arriving until
`day end + allowed_lateness` (and are read up to one ingestion hour later). Validating a day before
then compares an incomplete day with itself: every check passes and an undercount would be published as
validated. A missing ingestion hour inside the read window is the same undercount, caused by a lost or
delayed delivery. A day is **settled** when neither is the case; only settled days are validated as
final (a spec may allow *provisional* promotion of days whose horizon has not passed yet).

An archive written by Kafka Connect proves more than hours can: per Kafka partition its files' offsets
must be contiguous (`archive.kafka_connect`), so a quiet hour is no problem and a lost file always is.
With `edges_from_topic`, the live topic's offsets for the window's start and end times must also be the
first and last its files hold (`archive.topic_edges`): a file lost at a window's edge is seen too. Producers
that number their records prove it the same way, inside the payload (`sequence`, `sequences.py`). Each day
says which proof it got (`proof`).
"""

from __future__ import annotations

import logging
from bisect import bisect_left
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from backfill_platform.pipeline.archive.kafka_connect import kafka_file, offset_problems
from backfill_platform.pipeline.archive.listing import ArchiveFile
from backfill_platform.pipeline.archive.topic_edges import (
    TopicUnreachable,
    TopicWindows,
    WindowEdges,
    edge_problems,
)
from backfill_platform.pipeline.hour_mapping import ReadPlan
from backfill_platform.specs.durations import HOUR
from backfill_platform.specs.stream import StreamSpec

# The proof of a table archive's day whose rows were not read (a plan): none, its offsets unread. The run's
# `settled` check reads them (`table_offsets.table_offset_gaps`); a plan must not look as if it had.
OFFSETS_NOT_READ = "not read (proven in the run)"


@dataclass(frozen=True)
class PartitionCompleteness:
    """What a day's read window holds at the time `now`."""

    day: str
    horizon: datetime  # the day settles once `now` reaches this
    horizon_passed: bool
    missing_hours: list[datetime] = field(default_factory=list)  # due, but no archive file
    pending_hours: list[datetime] = field(default_factory=list)  # not due yet
    # Missing Kafka offsets or producers' sequence numbers, each naming its files.
    gaps: list[str] = field(default_factory=list)
    proof: str = "ingestion hours"  # what proved (or would prove) the window has no hole

    @property
    def settled(self) -> bool:
        return self.horizon_passed and not self.missing_hours and not self.gaps

    def problem(self) -> str | None:
        """Why the day is not settled, naming the hours, offsets or numbers; None when it is."""
        parts = []
        if not self.horizon_passed:
            parts.append(
                f"lateness horizon not passed (settles at {self.horizon:%Y-%m-%d %H:%M} UTC, "
                f"{len(self.pending_hours)} ingestion hours still to come)"
            )
        if self.missing_hours:
            parts.append(f"no archive file for ingestion hours {format_hours(self.missing_hours)}")
        parts.extend(self.gaps)
        return "; ".join(parts) or None


def proves_by_offsets(spec: StreamSpec) -> bool:
    """Whether the stream's days are proven complete by contiguous Kafka offsets instead of by hours."""
    kafka = spec.archive.kafka_offsets
    return kafka is not None and not kafka.offsets_have_gaps


EdgesLookup = Callable[[str, datetime, datetime], WindowEdges]


def topic_edges_lookup(spec: StreamSpec) -> EdgesLookup | None:
    """How to ask the live topic for a window's edges, when the spec wants it (None otherwise)."""
    kafka = spec.archive.kafka_offsets
    if kafka is None or not kafka.edges_from_topic:
        return None
    from backfill_platform.pipeline.kafka_cluster import KafkaResource

    return TopicWindows(KafkaResource().client_config())


def completeness(
    spec: StreamSpec,
    plan: ReadPlan,
    files: Iterable[ArchiveFile],
    now: datetime,
    file_records: dict[str, int] | None = None,
    sequence_gaps: dict[str, list[str]] | None = None,
    edges: EdgesLookup | None = None,
    proofs: dict[str, str] | None = None,
) -> dict[str, PartitionCompleteness]:
    """Each day's completeness (the partitions of `plan`, the run's read windows), given the archive files
    listed for their read windows. A day settles at its read window's end (its end + the allowed lateness +
    the one hour its last file may take).

    Where offsets prove it (`proves_by_offsets`), `file_records` holds each file's record count and a
    day's hours may be empty; its read window's files must hold contiguous offsets instead, and with
    `edges` (`topic_edges_lookup`) begin and end where the live topic says the window does. Where the
    producers number their records (`sequence`), `sequence_gaps` holds each day's holes (`sequences.py`)
    and hours may be empty too.
    """
    # Sorted by hour: a partition's read window is a slice of them (a year of hours would otherwise scan
    # every file once per partition).
    files = sorted(files, key=lambda f: _utc(f.ingestion_hour))
    listed_hours = [_utc(f.ingestion_hour) for f in files]
    present = set(listed_hours)
    by_offsets = proves_by_offsets(spec)
    result = {}
    for day, read in plan.partitions.items():
        needed = plan.required_hours(day)
        due = [h for h in needed if h + HOUR <= now]
        horizon = read.high
        gaps: list[str] = []
        proof = "sequence numbers" if spec.sequence is not None else "ingestion hours"
        gaps += (sequence_gaps or {}).get(day, [])
        if by_offsets and spec.archive.kafka_metadata is not None:
            # Read from the rows when the days are ingested (`table_offsets`): the gaps come with
            # `sequence_gaps`, the proof with `proofs`. A plan reads no rows: its days say so
            # (`OFFSETS_NOT_READ`), never that their offsets were found whole.
            proof = (proofs or {}).get(day, OFFSETS_NOT_READ)
        elif by_offsets:
            high = read.high
            window = set(read.hours())
            inside = files[
                bisect_left(listed_hours, min(window, default=high)) : bisect_left(listed_hours, high)
            ]
            names = [f.name for f in inside]
            gaps += offset_problems(names, file_records or {}, spec.archive.kafka_connect.topic)
            proof = "Kafka offsets inside the files"
            if edges is not None and window:
                # The window's files are those of whole ingestion hours: its edges are theirs.
                first_hour, after = min(window), max(window) + HOUR
                edge_gaps, proof = _edges(spec, edges, names, file_records or {}, first_hour, after)
                gaps += edge_gaps
        hours_matter = not (spec.allow_empty_hours or by_offsets or spec.sequence is not None)
        result[day] = PartitionCompleteness(
            day=day,
            horizon=horizon,
            horizon_passed=horizon <= now,
            missing_hours=[h for h in due if h not in present] if hours_matter else [],
            pending_hours=[h for h in needed if h + HOUR > now],
            gaps=gaps,
            proof=proof,
        )
    return result


def _edges(
    spec: StreamSpec,
    edges: EdgesLookup,
    names: list[str],
    records: dict[str, int],
    low: datetime,
    high: datetime,
) -> tuple[list[str], str]:
    """The window's edge problems against the live topic, and the proof they amount to."""
    topic = spec.archive.kafka_connect.topic
    try:
        found = edges(topic, low, high)
    except TopicUnreachable as error:
        logging.getLogger(__name__).warning("no edge proof for %s: %s", spec.name, error)
        return [], f"Kafka offsets inside the files only (the topic could not be asked: {error})"
    by_partition: dict[int, list[tuple[str, int, int]]] = {}
    for name in names:
        parsed = kafka_file(name)
        if parsed is not None and parsed.topic == topic and name in records:
            by_partition.setdefault(parsed.partition, []).append((name, parsed.start_offset, records[name]))
    proof = f"Kafka offsets inside the files and at the window's edges (topic {topic!r})"
    if found.beyond_retention:
        listed = ", ".join(str(p) for p in found.beyond_retention)
        proof += f"; partitions {listed} inside the files only (beyond the topic's retention)"
    return edge_problems(found, by_partition), proof


def format_hours(values: list[datetime]) -> str:
    """Consecutive hours as ranges: `2026-10-03 05:00 to 06:59, 2026-10-03 09:00 to 09:59`."""
    runs: list[list[datetime]] = []
    for hour in sorted(values):
        if runs and hour - runs[-1][-1] == HOUR:
            runs[-1].append(hour)
        else:
            runs.append([hour])
    return ", ".join(f"{r[0]:%Y-%m-%d %H}:00 to {r[-1]:%H}:59" for r in runs)


def _utc(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=UTC)
