"""Completeness of a table archive proven by the Kafka offsets its rows carry (`archive.kafka_metadata`).

Iceberg's Kafka Connect sink writes each record's partition and offset beside it. Within what a day's
read window holds, each partition's offsets must then run without a hole: a missing offset is a record
the table lacks (lost by the writer, or deleted from the landing table since), named by partition and
offsets, whichever hour it would have been in. Offsets and ingestion times must rise together for a
window's offsets to be contiguous: the sink's Kafka timestamps with `LogAppendTime` topics do.
"""

from __future__ import annotations

from collections import defaultdict

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from backfill_platform.pipeline.events.sequences import MAX_NAMED, day_windows
from backfill_platform.specs.stream import StreamSpec


def table_offset_gaps(records: DataFrame, spec: StreamSpec, days: list[str]) -> dict[str, list[str]]:
    """For each day, the Kafka offsets missing inside its read window's rows, per partition, e.g.
    `Kafka partition 2: offsets 1200-1249 missing (rows of raw_landing.playback@5123…)`; [] when none."""
    table = spec.archive.iceberg_table
    windows = day_windows(records.sparkSession, spec, days)
    seen = (
        records.where(F.col("_kafka_partition").isNotNull() & F.col("_kafka_offset").isNotNull())
        .join(
            F.broadcast(windows),
            (F.col("_ingestion_time") >= F.col("_low")) & (F.col("_ingestion_time") < F.col("_high")),
        )
        .select("_day", "_kafka_partition", "_kafka_offset")
        .distinct()
    )
    order = Window.partitionBy("_day", "_kafka_partition").orderBy("_kafka_offset")
    holes = seen.withColumn("_previous", F.lag("_kafka_offset").over(order)).where(
        F.col("_kafka_offset") - F.col("_previous") > 1
    )
    counted = holes.groupBy("_day").count().collect()
    named = (
        holes.withColumn(
            "_rank",
            F.row_number().over(Window.partitionBy("_day").orderBy("_kafka_partition", "_kafka_offset")),
        )
        .where(F.col("_rank") <= MAX_NAMED)
        .orderBy("_day", "_rank")
        .collect()
    )
    problems: dict[str, list[str]] = defaultdict(list)
    for row in named:
        first, last = row["_previous"] + 1, row["_kafka_offset"] - 1
        span = f"offset {first}" if first == last else f"offsets {first}-{last}"
        problems[row["_day"]].append(
            f"Kafka partition {row['_kafka_partition']}: {span} missing from table {table} "
            f"(between offsets {row['_previous']} and {row['_kafka_offset']} of the read window)"
        )
    for row in counted:
        if row["count"] > MAX_NAMED:
            problems[row["_day"]].append(f"{row['count'] - MAX_NAMED} more Kafka offset holes")
    return {day: problems.get(day, []) for day in days}
