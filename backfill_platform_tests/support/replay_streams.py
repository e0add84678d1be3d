"""Streams of their own for replay tests that file erasure requests.

Requests are scoped to a stream's name and the catalog is the session's: a request for `playback` would be
honored by every other test's replay and events run. A copy of the demo stream under another name, its
events table filled from the session's `playback_events` (one Iceberg CTAS, no archive run), keeps them
to the test that filed them.
"""

from __future__ import annotations

from datetime import date

from pyspark.sql import SparkSession

from backfill_platform.lakehouse.tables import RAW_NAMESPACE, table_id
from backfill_platform.specs.durations import midnight
from backfill_platform.specs.stream import StreamSpec


def replay_stream(
    spark: SparkSession, playback: StreamSpec, name: str, first: date, after: date, **changes
) -> StreamSpec:
    """`playback` declared as stream `name` (with `changes`), its events table holding the session's
    playback events of [first, after)."""
    spec = playback.model_copy(update={"name": name, **changes})
    source = table_id(spark, RAW_NAMESPACE, playback.events_table)
    target = table_id(spark, RAW_NAMESPACE, spec.events_table)
    low, high = midnight(first).isoformat(), midnight(after).isoformat()
    spark.sql(
        f"CREATE OR REPLACE TABLE {target} USING iceberg AS SELECT * FROM {source} "
        f"WHERE event_time >= TIMESTAMP '{low}' AND event_time < TIMESTAMP '{high}'"
    )
    return spec


def replay_order(rows: list[dict]) -> list[dict]:
    """Events table rows in the order a replay sends them: (event_time, event_id)."""
    return sorted(rows, key=lambda row: (row["event_time"], row["event_id"]))
