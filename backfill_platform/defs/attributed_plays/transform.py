"""Plays attributed to the impressions that led to them — in two versions.

A play (a playback `start`) is attributed to the latest impression of the same title shown to the same
viewer within the 30 minutes before it (ties: the greatest impression id). The dataset reads the
impressions from 30 minutes before each day (`lookback: 30m`), so v2 attributes a play at 00:05 to an
impression at 23:50 the day before. v1 is the old batch job that read one day of each stream: it joins
impressions of the play's own day only, and plays in the first half hour of a day lose their impression.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

ATTRIBUTION_WINDOW_SECONDS = 30 * 60


def _attributed(playback: DataFrame, impressions: DataFrame, same_day_only: bool) -> DataFrame:
    plays = playback.where(F.col("event_type") == "start").select(
        F.col("event_id").alias("play_id"), F.col("event_time").alias("play_time"), "user_id", "title_id"
    )
    shown = impressions.select(
        F.col("event_id").alias("impression_id"),
        F.col("event_time").alias("impression_time"),
        F.col("user_id").alias("i_user_id"),
        F.col("title_id").alias("i_title_id"),
    )
    lead = F.col("play_time").cast("double") - F.col("impression_time").cast("double")
    led_to: Column = (
        (F.col("i_user_id") == F.col("user_id"))
        & (F.col("i_title_id") == F.col("title_id"))
        & (lead >= 0)
        & (lead <= ATTRIBUTION_WINDOW_SECONDS)
    )
    if same_day_only:  # the bug: the old job saw one day of impressions
        led_to = led_to & (F.to_date("impression_time") == F.to_date("play_time"))
    latest_first = Window.partitionBy("play_id").orderBy(
        F.col("impression_time").desc_nulls_last(), F.col("impression_id").desc_nulls_last()
    )
    return (
        plays.join(shown, led_to, "left")
        .withColumn("_rank", F.row_number().over(latest_first))
        .where(F.col("_rank") == 1)
        .select(
            F.to_date("play_time").alias("play_date"),
            F.hour("play_time").alias("play_hour"),
            "play_id",
            "user_id",
            "title_id",
            "impression_id",
            F.floor(lead).cast("bigint").alias("seconds_to_play"),
            F.col("impression_id").isNotNull().cast("bigint").alias("attributed"),
        )
    )


def attributed_v1(playback: DataFrame, impressions: DataFrame) -> DataFrame:
    """The old batch job: impressions of the play's own day only (the bug)."""
    return _attributed(playback, impressions, same_day_only=True)


def attributed_v2(playback: DataFrame, impressions: DataFrame) -> DataFrame:
    """The fix: the impressions of the 30 minutes before each play, across midnight."""
    return _attributed(playback, impressions, same_day_only=False)
