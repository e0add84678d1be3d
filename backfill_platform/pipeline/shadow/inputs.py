"""What a dataset's days read: each source's events over the days and its lookback, pinned and fingerprinted.

Day D of a dataset reads, from each source, the events whose event time lies in

    [D start - lookback, D end)

its own day, and the tail of the day(s) before that the source's lookback reaches into. Everything that
judges a dataset day against its inputs uses this one definition: the transform's input, the
`events_validated` check (every source day read must be ingested, checked, settled and unchanged since),
the input fingerprint recorded with each validation, and the promotion gate, which refuses a day whose
inputs changed in any source since it was validated.

A day's input fingerprint is the sum, over its sources, of the fingerprint of exactly the events it
reads (row counts and xxhash64 sums add up), so a late event in the last half hour of a day changes the
next day's inputs only when that day's lookback reaches it. Per source it is also recorded as text in
the ledger (`playback=1200/…;impressions=340/…`): a refusal names the source whose events changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from pyspark.sql import DataFrame, SparkSession

from backfill_platform.lakehouse.snapshots import current_snapshot_id
from backfill_platform.lakehouse.tables import in_range, read_at, table_exists
from backfill_platform.pipeline.ledger.ledger import latest_ingestions
from backfill_platform.pipeline.names import events_table
from backfill_platform.pipeline.partitions import partition_of
from backfill_platform.pipeline.validation.buckets import events_values, expectations_from
from backfill_platform.pipeline.validation.fingerprints import (
    Fingerprint,
    fingerprints_by_partition,
    input_fingerprints,
)
from backfill_platform.pipeline.validation.partition_inputs import (
    JudgedInputs,
    PartitionInputs,
    partition_inputs,
)
from backfill_platform.pipeline.validation.snapshot_figures import (
    events_at,
    events_expectations,
    events_fingerprints,
)
from backfill_platform.specs.dataset import DatasetSpec, SourceInput
from backfill_platform.specs.durations import midnight
from backfill_platform.specs.grain import Grain
from backfill_platform.specs.stream import StreamSpec


def source_days(days: Sequence[str], source: SourceInput, grain: Grain, source_grain: Grain) -> list[str]:
    """The partitions of a source (of `source_grain`) that the dataset's partitions `days` (of `grain`)
    read: those overlapping [start - lookback, end) of each (`read_interval`)."""
    if grain == source_grain:
        back = source.partitions_back(grain)
        return sorted({grain.shift(day, -n) for day in days for n in range(back + 1)})
    read: set[str] = set()
    for day in days:
        start, end = read_interval(*grain.bounds(day), source)
        read.update(source_grain.keys_between(source_grain.floor(start), end))
    return sorted(read)


def read_interval(start: datetime, end: datetime, source: SourceInput) -> tuple[datetime, datetime]:
    """The event times the dataset partitions [start, end) read from this source."""
    return start - source.lookback, end


@dataclass
class SourceRead:
    """One source as a run of the dataset reads it: its events table pinned at one snapshot."""

    source: SourceInput
    stream: StreamSpec
    table: str
    snapshot_id: int | None
    events: DataFrame  # the read interval of the run's days, at `snapshot_id`


def read_source(
    spark: SparkSession, source: SourceInput, stream: StreamSpec, start: datetime, end: datetime
) -> SourceRead:
    """Pin the source's events table and read what the partitions [start, end) read from it."""
    table = events_table(spark, stream)
    snapshot_id = current_snapshot_id(spark, table)
    events = read_at(spark, table, snapshot_id).where(
        in_range("event_time", *read_interval(start, end, source))
    )
    return SourceRead(source, stream, table, snapshot_id, events)


def whole_day_fingerprints(read: SourceRead, spark: SparkSession, days: list[str]) -> dict[str, Fingerprint]:
    """Whole-partition fingerprints of source partitions at the pinned snapshot (those the dataset's own
    do not give: a lookback's, or a source of another grain's; their ingestion's verdict is about the
    whole partition)."""
    if not days:
        return {}
    grain = read.stream.grain
    return fingerprints_by_partition(
        events_at(spark, read.table, read.snapshot_id, days, grain), partition_of(grain, "event_time"), days
    )


def judge_inputs(
    session: SparkSession, spec: DatasetSpec, reads: dict[str, SourceRead], days: list[str]
) -> JudgedInputs:
    """What the dataset days read from every source, at the pinned snapshots, in one pass per source: the
    expectations of the rules aggregating it, the whole-day fingerprints and ingestions of every source
    day read, and each dataset day's input fingerprint."""
    values: dict = {}
    inputs: dict[str, dict[str, Fingerprint]] = {}
    judged = JudgedInputs(spec=spec)
    for source in spec.inputs:
        read = reads[source.stream]
        # Days before the stream's first partition do not exist: nothing there is read or waited for.
        source_grain = read.stream.grain
        first = source_grain.key(midnight(read.stream.first_partition))
        for day in days:
            judged.reads.setdefault(day, [])
            read_by_day = source_days([day], source, spec.grain, source_grain)
            judged.reads[day] += [(source.stream, d) for d in read_by_day if d >= first]
        read_days = sorted({d for day in days for stream, d in judged.reads[day] if stream == source.stream})
        if read.snapshot_id is not None:
            found, own = events_expectations(
                session, read.table, spec, source.stream, days, read.snapshot_id, spec.grain
            )
        else:
            found, own = events_values(read.events, spec, source.stream, days)
        for bucket, bucket_values in found.items():
            values.setdefault(bucket, {}).update(bucket_values)
        # The dataset's own partitions are the source's when of one grain: their fingerprints are computed.
        before = [d for d in read_days if d not in own or spec.grain != source_grain]
        own_read = own if spec.grain == source_grain else {}
        judged.fingerprints_by_partition[source.stream] = {
            **own_read,
            **whole_day_fingerprints(read, session, before),
        }
        judged.ingestions[source.stream] = latest_ingestions(session, source.stream, read_days)
        lookback = source.lookback
        inputs[source.stream] = (
            own if not lookback else input_fingerprints(read.events, source, days, spec.grain)
        )
    judged.expected = expectations_from(values, spec)
    judged.inputs = partition_inputs(inputs, days)
    return judged


def current_inputs(
    spark: SparkSession, spec: DatasetSpec, streams: Sequence[StreamSpec], days: list[str]
) -> dict[str, PartitionInputs]:
    """Each day's PartitionInputs as the events tables hold them now (what the promotion gate compares)."""
    by_name = {s.name: s for s in streams}
    per_source: dict[str, dict[str, Fingerprint]] = {}
    for source in spec.inputs:
        stream = by_name[source.stream]
        table = events_table(spark, stream)
        if not source.lookback:
            # Usually computed at this snapshot by the run's shadow step already (snapshot_figures).
            per_source[source.stream] = events_fingerprints(spark, table, days, spec.grain)
            continue
        if not table_exists(spark, table):
            per_source[source.stream] = dict.fromkeys(days, Fingerprint.EMPTY)
            continue
        start, end = spec.grain.bounds(min(days), max(days))
        read = read_source(spark, source, stream, start, end)
        per_source[source.stream] = input_fingerprints(read.events, source, days, spec.grain)
    return partition_inputs(per_source, days)
