"""Completeness of a table archive proven by the Kafka offsets its rows carry (`archive.kafka_metadata`).

Iceberg's Kafka Connect sink writes each record's partition and offset beside it. Within what a day's
read window holds, each partition's offsets must then run without a hole: a missing offset is a record
the table lacks (lost by the writer, or deleted from the landing table since), named by partition and
offsets, whichever hour it would have been in. Offsets and ingestion times must rise together for a
window's offsets to be contiguous: the sink's Kafka timestamps with `LogAppendTime` topics do.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from backfill_platform.pipeline.archive.topic_edges import TopicUnreachable, WindowEdges
from backfill_platform.pipeline.events.sequences import MAX_NAMED, day_windows, holes_by_day, in_day_windows
from backfill_platform.pipeline.hour_mapping import ReadPlan, ReadWindow
from backfill_platform.specs.stream import StreamSpec

INSIDE = "Kafka offsets of the table's rows"
EdgesLookup = Callable[[str, datetime, datetime], WindowEdges]


@dataclass
class TableOffsets:
    """Per day: the Kafka offsets its read window's rows lack (as problems), and what proved it."""

    gaps: dict[str, list[str]] = field(default_factory=dict)
    proofs: dict[str, str] = field(default_factory=dict)


def table_offset_gaps(
    records: DataFrame, spec: StreamSpec, plan: ReadPlan, edges: EdgesLookup | None = None
) -> TableOffsets:
    """For each day of the run's `plan`, the Kafka offsets missing inside its read window's rows, per partition, e.g.
    `Kafka partition 2: offsets 1200-1249 missing from table raw_landing.playback (…)`; with `edges`
    (`archive.kafka_metadata.edges_from_topic`), also those the live topic holds for the window before its
    first row or after its last."""
    table, days = spec.archive.iceberg_table, plan.keys
    located = records.where(F.col("_kafka_partition").isNotNull() & F.col("_kafka_offset").isNotNull())
    seen = (
        in_day_windows(located, day_windows(records.sparkSession, plan))
        .select("_day", "_kafka_partition", "_kafka_offset")
        .distinct()
    )
    counted, named = holes_by_day(seen, "_kafka_partition", "_kafka_offset")
    problems: dict[str, list[str]] = defaultdict(list)
    for row in named:
        first, last = row["_previous"] + 1, row["_kafka_offset"] - 1
        span = f"offset {first}" if first == last else f"offsets {first}-{last}"
        problems[row["_day"]].append(
            f"Kafka partition {row['_kafka_partition']}: {span} missing from table {table} "
            f"(between offsets {row['_previous']} and {row['_kafka_offset']} of the read window)"
        )
    for day, count in counted.items():
        if count > MAX_NAMED:
            problems[day].append(f"{count - MAX_NAMED} more Kafka offset holes")
    result = TableOffsets({day: problems.get(day, []) for day in days}, dict.fromkeys(days, INSIDE))
    if edges is not None:
        spans: dict[str, dict[int, tuple[int, int]]] = defaultdict(dict)
        for row in (
            seen.groupBy("_day", "_kafka_partition")
            .agg(F.min("_kafka_offset").alias("first"), F.max("_kafka_offset").alias("last"))
            .collect()
        ):
            spans[row["_day"]][row["_kafka_partition"]] = (row["first"], row["last"])
        for day in days:
            found, proof = _edges_of(spec, edges, plan.partitions[day], spans.get(day, {}))
            result.gaps[day] += found
            result.proofs[day] = proof
    return result


def _edges_of(
    spec: StreamSpec, edges: EdgesLookup, read: ReadWindow, spans: dict[int, tuple[int, int]]
) -> tuple[list[str], str]:
    """A day's edge problems against the live topic (over the hours its window `read` lists), and the proof
    they amount to."""
    topic, table = spec.archive.kafka_metadata.topic, spec.archive.iceberg_table
    try:
        window = edges(topic, read.first_hour, read.high)
    except TopicUnreachable as error:
        logging.getLogger(__name__).warning("no edge proof for %s: %s", spec.name, error)
        return [], f"{INSIDE} only (the topic could not be asked: {error})"
    problems = []
    for partition, (first, end) in sorted(window.offsets.items()):
        held = spans.get(partition)
        if held is None:
            if end > first:
                problems.append(
                    f"Kafka partition {partition}: offsets {first}-{end - 1} of the window are in topic "
                    f"{topic!r} but not in table {table}"
                )
            continue
        if held[0] > first:
            problems.append(
                f"Kafka partition {partition}: offsets {first}-{held[0] - 1} missing from table {table} "
                f"(the topic's first of the window: {first})"
            )
        if held[1] + 1 < end:
            problems.append(
                f"Kafka partition {partition}: offsets {held[1] + 1}-{end - 1} missing from table {table} "
                f"(the topic's last of the window: {end - 1})"
            )
    proof = f"{INSIDE} and at the window's edges (topic {topic!r})"
    if window.beyond_retention:
        listed = ", ".join(str(p) for p in window.beyond_retention)
        proof += f"; partitions {listed} inside the table only (beyond the topic's retention)"
    return problems, proof
