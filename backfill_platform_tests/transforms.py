"""Deliberately broken (and one legitimately emptied) versions of views_per_title, for the gate tests."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from backfill_platform.defs.views_per_title.transform import views_v2

EXCLUDED_DAY = "2026-10-02"


def dropped_rows(events: DataFrame) -> DataFrame:
    """Loses about a tenth of the rows."""
    return views_v2(events).where(F.xxhash64("title_id", "event_hour") % 10 != 0)


def doubled_rows(events: DataFrame) -> DataFrame:
    """Writes the evening rows twice."""
    views = views_v2(events)
    return views.unionByName(views.where(F.col("event_hour") == 20))


def altered_aggregate(events: DataFrame) -> DataFrame:
    """Adds one view to a single row of each day: row counts still match, sums do not."""
    views = views_v2(events)
    target = (F.col("event_hour") == 20) & (F.col("title_id") == "t0001")
    return views.withColumn("views", F.when(target, F.col("views") + 1).otherwise(F.col("views")))


def without_excluded_day(events: DataFrame) -> DataFrame:
    """A fix that excludes one day's events entirely (e.g. found to be test traffic)."""
    return views_v2(events.where(F.to_date("event_time") != F.lit(EXCLUDED_DAY)))


FLAKY_DAY = "2026-10-02"


def dropped_rows_on_one_day(events: DataFrame) -> DataFrame:
    """Loses about a tenth of the rows of FLAKY_DAY only: that day fails its checks, the others pass."""
    views = views_v2(events)
    lost = (F.col("event_date") == F.lit(FLAKY_DAY)) & (F.xxhash64("title_id", "event_hour") % 10 == 0)
    return views.where(~lost)


def attributed_held(playback: DataFrame, impressions_held: DataFrame) -> DataFrame:
    """attributed_plays v2 over a copy of the impressions stream named `impressions_held`."""
    from backfill_platform.defs.attributed_plays.transform import attributed_v2

    return attributed_v2(playback, impressions_held)


def attributed_gate(playback: DataFrame, impressions_gate: DataFrame) -> DataFrame:
    """attributed_plays v2 over a copy of the impressions stream named `impressions_gate`."""
    from backfill_platform.defs.attributed_plays.transform import attributed_v2

    return attributed_v2(playback, impressions_gate)


def attributed_before(playback_before: DataFrame, impressions_before: DataFrame) -> DataFrame:
    """attributed_plays v2 over copies of both streams (`test_join_days_before.py`)."""
    from backfill_platform.defs.attributed_plays.transform import attributed_v2

    return attributed_v2(playback_before, impressions_before)


def attributed_from_table(playback_files: DataFrame, impressions_table: DataFrame) -> DataFrame:
    """attributed_plays v2 over a folder archive and a table archive (`test_join_table_archive.py`)."""
    from backfill_platform.defs.attributed_plays.transform import attributed_v2

    return attributed_v2(playback_files, impressions_table)


def plays_per_user(events: DataFrame) -> DataFrame:
    """Starts per user and event-time hour: a dataset whose table holds the subject (erasure tests)."""
    return (
        events.where(F.col("event_type") == "start")
        .groupBy(
            F.to_date("event_time").alias("event_date"), F.hour("event_time").alias("event_hour"), "user_id"
        )
        .agg(F.count(F.lit(1)).alias("plays"))
    )
