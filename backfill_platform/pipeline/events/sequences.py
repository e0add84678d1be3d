"""Completeness proven by the producers' own sequence numbers (seed 004), per day's read window.

A stream that declares `sequence: {key, field}` has each producer number its records 1, 2, 3, ...; a
hole in a producer's numbers within what a day reads is a record that never reached the archive,
whichever hour it would have been in. A day's verdict depends on its own read window only (never on the
range a run covers): the numbers seen in the ingestion hours the day reads, each producer's first and
last there free to continue other days'.
"""

from __future__ import annotations

from collections import defaultdict

from pyspark.sql import DataFrame, Row, SparkSession, Window
from pyspark.sql import functions as F

from backfill_platform.pipeline.hour_mapping import ReadPlan
from backfill_platform.specs.stream import StreamSpec

MAX_NAMED = 5  # missing ranges named per day; the count says how many there are in all


def sequence_gaps(
    spark: SparkSession, records: DataFrame, spec: StreamSpec, plan: ReadPlan
) -> dict[str, list[str]]:
    """For each day, its producers' missing sequence ranges as problems, e.g.
    `sequence of producer_id p7: 1201-1249 missing (between files A and B)`; an empty list when none.

    `records` are the parsed records of the run's files (`parse.parse_records`, with `_sequence_key` and
    `_sequence`); each is judged in the windows of every day of the run's `plan` that reads its
    ingestion hour.
    """
    days = plan.keys
    numbered = records.where(F.col("_sequence_key").isNotNull() & F.col("_sequence").isNotNull())
    seen = (
        in_day_windows(numbered, day_windows(spark, plan))
        .groupBy("_day", "_sequence_key", "_sequence")
        .agg(F.min("_source_file").alias("_file"))  # a number delivered twice: either copy shows it
    )
    counted, named = holes_by_day(seen, "_sequence_key", "_sequence", carried="_file")
    problems: dict[str, list[str]] = defaultdict(list)
    for row in named:
        first, last = row["_previous"] + 1, row["_sequence"] - 1
        span = f"{first}" if first == last else f"{first}-{last}"
        where = (
            f"in file {row['_file']}"
            if row["_file"] == row["_previous_file"]
            else f"between files {row['_previous_file']} and {row['_file']}"
        )
        problems[row["_day"]].append(
            f"sequence of {spec.sequence.key} {row['_sequence_key']}: {span} missing ({where})"
        )
    for day, count in counted.items():
        if count > MAX_NAMED:
            problems[day].append(f"{count - MAX_NAMED} more sequence holes")
    return {day: problems.get(day, []) for day in days}


def in_day_windows(records: DataFrame, windows: DataFrame) -> DataFrame:
    """`records` once per day whose read window (`day_windows`) holds its ingestion time, with `_day`."""
    return records.join(
        F.broadcast(windows),
        (F.col("_ingestion_time") >= F.col("_low")) & (F.col("_ingestion_time") < F.col("_high")),
    )


def holes_by_day(
    seen: DataFrame, key: str, number: str, carried: str | None = None
) -> tuple[dict[str, int], list[Row]]:
    """Where `number` skips within each (`_day`, `key`) of `seen`: how many holes each day has, and its
    first MAX_NAMED (rows with `_previous`, the number before the hole, and `_previous<carried>`)."""
    order = Window.partitionBy("_day", key).orderBy(number)
    holes = seen.withColumn("_previous", F.lag(number).over(order))
    if carried is not None:
        holes = holes.withColumn(f"_previous{carried}", F.lag(carried).over(order))
    holes = holes.where(F.col(number) - F.col("_previous") > 1)
    counted = {row["_day"]: row["count"] for row in holes.groupBy("_day").count().collect()}
    named = (
        holes.withColumn("_rank", F.row_number().over(Window.partitionBy("_day").orderBy(key, number)))
        .where(F.col("_rank") <= MAX_NAMED)
        .orderBy("_day", "_rank")
        .collect()
    )
    return counted, named


def day_windows(spark: SparkSession, plan: ReadPlan) -> DataFrame:
    """(`_day`, `_low`, `_high`): the ingestion hours each day of `plan` lists (its read window, the first
    hour floored, as `listing.hours` lists it), to join records with."""
    return spark.createDataFrame(
        [(day, window.first_hour, window.high) for day, window in plan.partitions.items()],
        "_day string, _low timestamp, _high timestamp",
    )
