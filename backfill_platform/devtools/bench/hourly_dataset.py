"""The bench's hourly dataset: views and distinct viewers per title and UTC hour over `playback_hourly`.

The package declares no hourly dataset (its hours roll up into New York days), so the bench brings one to
measure a validated backfill of a year of hours (events, shadow, checks and promotion per hour) against
the same year by day (`views_per_title`). Bench-only: the project's definitions do not include it.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from backfill_platform.specs.dataset import DatasetSpec

NAME = "views_hourly"
STREAM = "playback_hourly"


def views_per_title_hour(events: DataFrame) -> DataFrame:
    """One row per (event_hour, title_id) with a start that hour: views = starts, and distinct viewers."""
    return (
        events.where(F.col("event_type") == "start")
        .groupBy(F.date_trunc("hour", "event_time").alias("event_hour"), "title_id")
        .agg(F.count(F.lit(1)).alias("views"), F.countDistinct("user_id").alias("unique_viewers"))
    )


def hourly_dataset() -> DatasetSpec:
    """The dataset's spec: partitioned by its `event_hour` timestamp, each hour one validation bucket."""
    return DatasetSpec.model_validate(
        {
            "kind": "dataset",
            "name": NAME,
            "description": "Views and distinct viewers per title and UTC hour (the bench's hourly dataset).",
            "source_stream": STREAM,
            "partition_column": "event_hour",
            "bucket": "partition",
            "key_columns": ["event_hour", "title_id"],
            "columns": {
                "event_hour": "timestamp",
                "title_id": "string",
                "views": "long",
                "unique_viewers": "long",
            },
            "versions": {"v1": {"transform": f"{__name__}:views_per_title_hour"}},
            "active_version": "v1",
            "expected_rows": {"filter": "event_type = 'start'", "expression": "count(DISTINCT title_id)"},
            "reconciliation": [
                {"column": "views", "filter": "event_type = 'start'", "expression": "count(1)"}
            ],
        }
    )
