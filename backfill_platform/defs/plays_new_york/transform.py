"""Plays and watch time per title and New York day: the day is the event time's date in New York."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

ZONE = "America/New_York"


def plays_per_new_york_day(events: DataFrame) -> DataFrame:
    """One row per (event_date, title_id) with a start or a stop that New York day: plays = starts, watch
    seconds = the stops' positions."""
    start, stop = F.col("event_type") == "start", F.col("event_type") == "stop"
    return (
        events.where(start | stop)
        .groupBy(F.to_date(F.from_utc_timestamp("event_time", ZONE)).alias("event_date"), "title_id")
        .agg(
            F.count(F.when(start, 1)).alias("plays"),
            F.coalesce(F.sum(F.when(stop, F.col("position_sec"))), F.lit(0)).alias("watch_seconds"),
        )
    )
