"""Decide which copy of each event id is written: the one comparison of copies, in one shuffle.

Parsed records (`parse.parse_records`) arrive with their reason, or none when admissible. Copies of an id
are compared within their event-time day and across a midnight (see `classify_window`); every other
record passes through unchanged.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from backfill_platform.lakehouse.tables import in_range
from backfill_platform.pipeline.events.parse import as_micros
from backfill_platform.pipeline.hour_mapping import ReadPlan
from backfill_platform.specs.stream import StreamSpec


def classify_window(records: DataFrame, spec: StreamSpec, plan: ReadPlan) -> DataFrame:
    """Keep the records attributed to the run's range (`plan`) and decide which admissible copy of each
    event id is kept.

    `_kept` marks the one copy written to the events table. Copies of an id are compared within their
    event-time day (earliest ingestion, then file and line, wins) and across a midnight when both were
    ingested in the hours that every window touching that midnight reads (from the plan's `before` margin
    before it to its `after` margin after it, `hour_mapping.ReadWindow`): those hours are read by the runs of both days, so both
    decide alike whatever range a run covers, and an id redelivered with an event time on the other
    side of midnight still has one row. A copy that loses is a duplicate when its raw line equals the
    one that beat it, and is quarantined as `conflicting_duplicate` (naming the winner) otherwise, so
    the losing payload is kept. Quarantined copies of an id (e.g. a too-late redelivery) are not copies
    of the admissible event.

    One window over each id's admissible copies does all of it: each copy sees the (small) list of its
    id's copies and picks its rivals from it, so the records are shuffled once and read once (no cache
    of the parsed records, no second pass for the midnights).
    """
    # An erased subject's record is no copy of anything: it is counted apart and written nowhere.
    admissible = F.col("_reason").isNull() & ~F.col("_erased")
    h_us = F.unix_micros("_ingestion_time")
    grain = spec.grain
    midnight_us = F.unix_micros(F.date_trunc(grain.unit, "_attributed_time"))
    day_us = as_micros(grain.length)
    before_us = as_micros(plan.before)
    after_us = as_micros(plan.after)

    def near(boundary: Column) -> Column:
        return F.when(admissible & (h_us >= boundary - before_us) & (h_us < boundary + after_us), boundary)

    keyed = (
        records.withColumn(
            "_key",
            F.when(
                admissible,
                F.struct(
                    h_us.alias("h"),
                    F.col("_source_file").alias("file"),
                    F.col("_line_number").alias("n"),
                    F.xxhash64("line").alias("hash"),
                ),
            ),
        )
        .withColumn("_day", F.date_trunc(grain.unit, "_attributed_time"))
        .withColumn("_b_start", near(midnight_us))
        .withColumn("_b_end", near(midnight_us + day_us))
    )
    # An admissible record's group is its id; any other record is a group of its own (records without an
    # id must not gather in one huge group).
    group = F.when(admissible, F.concat(F.lit("i"), F.col("event_id"))).otherwise(
        F.concat(F.lit("r"), F.col("_source_file"), F.lit(":"), F.col("_line_number").cast("string"))
    )
    copies = F.collect_list(F.struct("_day", "_key", "_b_start", "_b_end")).over(Window.partitionBy(group))

    def best(where) -> Column:
        """The smallest key among the copies where `where(copy)` holds (null when none does)."""
        return F.array_min(F.transform(F.filter(copies, where), lambda copy: copy["_key"]))

    same_day = best(lambda copy: copy["_day"] == F.col("_day"))
    # Rivals across a midnight: the earlier day's copies near this day's start, the later day's near its end.
    rival_before = best(lambda copy: copy["_b_end"] == F.col("_b_start"))
    rival_after = best(lambda copy: copy["_b_start"] == F.col("_b_end"))
    # Most ids have one copy, which wins alone: the comparison's `filter` and `transform`, which Spark
    # evaluates outside its generated code, run only for the ids with rivals.
    compared = keyed.withColumn(
        "_winner",
        F.when(F.size(copies) > 1, F.least(same_day, rival_before, rival_after)).otherwise(F.col("_key")),
    ).withColumn("_kept", F.coalesce(admissible & (F.col("_key") == F.col("_winner")), F.lit(False)))
    conflicting = admissible & ~F.col("_kept") & (F.col("_key.hash") != F.col("_winner.hash"))
    winner = F.concat(F.col("_winner.file"), F.lit(":"), F.col("_winner.n").cast("string"))
    return (
        compared.withColumn(
            "_detail", F.when(conflicting, F.concat(F.lit("kept "), winner)).otherwise(F.col("_detail"))
        )
        .withColumn(
            "_reason", F.when(conflicting, F.lit("conflicting_duplicate")).otherwise(F.col("_reason"))
        )
        .where(in_range("_attributed_time", plan.start, plan.end))
        .drop("_key", "_day", "_b_start", "_b_end", "_winner")
    )
