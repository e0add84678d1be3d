"""A daily dataset's transform (plays and watch time per day and title) and two broken versions of it.

The dataset is declared `bucket: day`: it has no hour column, so it is validated per day. The broken
versions each damage one day only (BROKEN_DAY), so the tests can check that exactly that day fails.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

BROKEN_DAY = "2026-10-02"


def daily_plays(events: DataFrame) -> DataFrame:
    """One row per (event_date, title_id) with a start or a stop: plays = starts, watch = stop positions."""
    start, stop = F.col("event_type") == "start", F.col("event_type") == "stop"
    return (
        events.where(start | stop)
        .groupBy(F.to_date("event_time").alias("event_date"), "title_id")
        .agg(
            F.count(F.when(start, 1)).alias("plays"),
            F.coalesce(F.sum(F.when(stop, F.col("position_sec"))), F.lit(0)).alias("watch_seconds"),
        )
    )


def _on_broken_day(title_share: int) -> Column:
    """About 1/title_share of BROKEN_DAY's titles, chosen by hash: deterministic, never empty here."""
    return (F.col("event_date") == F.lit(BROKEN_DAY)) & (F.xxhash64("title_id") % title_share == 0)


def dropping_rows_on_one_day(events: DataFrame) -> DataFrame:
    """Loses some titles of BROKEN_DAY: that day's row count is short, the other days are whole."""
    return daily_plays(events).where(~_on_broken_day(5))


def one_play_too_many_on_one_day(events: DataFrame) -> DataFrame:
    """Adds a play to some titles of BROKEN_DAY: row counts still match, that day's plays sum does not."""
    plays = daily_plays(events)
    return plays.withColumn("plays", F.when(_on_broken_day(5), F.col("plays") + 1).otherwise(F.col("plays")))
