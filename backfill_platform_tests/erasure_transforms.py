"""A dataset that holds the subject: plays per viewer, title and hour (its table keeps `user_id`)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def plays_per_viewer(events: DataFrame) -> DataFrame:
    starts = events.where(F.col("event_type") == "start")
    return starts.groupBy(
        F.to_date("event_time").alias("event_date"),
        F.hour("event_time").alias("event_hour"),
        "user_id",
        "title_id",
    ).agg(F.count(F.lit(1)).alias("plays"))
