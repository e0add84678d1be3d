"""Transforms over an hourly stream. An hourly dataset's (starts and distinct viewers per title and
event-time hour): the right one, and a bad deploy that is wrong only for events between T1 and T2
(18:10-19:40 on the session's second day), in a column no rule reconciles, so that it passes every
blocking check and reaches production, as seed 001's corruption window does. And daily datasets of a
time zone's days (plays per title and New York or Berlin day), rolled up from the hours.
"""

from __future__ import annotations

from datetime import datetime

from pyspark.sql import functions as F

T1, T2 = datetime(2026, 10, 2, 18, 10), datetime(2026, 10, 2, 19, 40)


def _hourly(events, extra_viewers):
    start = F.col("event_type") == "start"
    return (
        events.where(start)
        .groupBy(F.date_trunc("hour", "event_time").alias("event_hour"), "title_id")
        .agg(
            F.count(F.lit(1)).alias("views"),
            (F.countDistinct("user_id") + extra_viewers).alias("unique_viewers"),
        )
    )


def hourly_views(events):
    """v1: starts and distinct viewers per title and event-time hour."""
    return _hourly(events, F.lit(0))


def viewers_doubled_between(events):
    """v2, the bad deploy: a viewer of an event in [T1, T2) counted twice. Views (reconciled) are right."""
    bounds = [F.to_timestamp(F.lit(t.isoformat(sep=" "))) for t in (T1, T2)]
    window = (F.col("event_time") >= bounds[0]) & (F.col("event_time") < bounds[1])
    return _hourly(events, F.countDistinct(F.when(window, F.col("user_id"))))


def _plays_per_local_day(events, zone: str):
    """Plays (starts) and watch seconds (stop positions) per title and day of `zone`, as `daily_plays`
    does per UTC day: the local day is the event time's date in that zone."""
    start, stop = F.col("event_type") == "start", F.col("event_type") == "stop"
    local_day = F.to_date(F.from_utc_timestamp("event_time", zone))
    return (
        events.where(start | stop)
        .groupBy(local_day.alias("event_date"), "title_id")
        .agg(
            F.count(F.when(start, 1)).alias("plays"),
            F.coalesce(F.sum(F.when(stop, F.col("position_sec"))), F.lit(0)).alias("watch_seconds"),
        )
    )


def new_york_plays(events):
    """Plays and watch seconds per title and New York day."""
    return _plays_per_local_day(events, "America/New_York")


def berlin_plays(events):
    """Plays and watch seconds per title and Berlin day."""
    return _plays_per_local_day(events, "Europe/Berlin")
