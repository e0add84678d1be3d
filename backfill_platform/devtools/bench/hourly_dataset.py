"""The bench's hourly dataset: views and distinct viewers per title and UTC hour over `playback_hourly`.

The package declares no hourly dataset (its hours roll up into New York days), so the bench brings one to
measure a validated backfill of a year of hours (events, shadow, checks and promotion per hour) against
the same year by day (`views_per_title`). Bench-only: the package's project does not include it, so the
bench loads a project of its own, the package's components and this dataset's (`bench_project`).
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from backfill_platform.components.project import copy_demo_components, init_project
from backfill_platform.components.registry import Project, find_project
from backfill_platform.components.spec_component import COMPONENT_FILE

NAME = "views_hourly"
STREAM = "playback_hourly"


def views_per_title_hour(events: DataFrame) -> DataFrame:
    """One row per (event_hour, title_id) with a start that hour: views = starts, and distinct viewers."""
    return (
        events.where(F.col("event_type") == "start")
        .groupBy(F.date_trunc("hour", "event_time").alias("event_hour"), "title_id")
        .agg(F.count(F.lit(1)).alias("views"), F.countDistinct("user_id").alias("unique_viewers"))
    )


def bench_project(parent: Path) -> Project:
    """A new project under `parent`, loaded as a team's is: the package's streams and datasets (its defs
    folder's component instances, copied) and the hourly dataset beside them."""
    root = parent / "bench_hourly"
    init_project(root)
    defs = root / root.name / "defs"
    copy_demo_components(defs)
    (defs / NAME).mkdir()
    instance = {"type": "backfill_platform.components.Dataset", "attributes": hourly_dataset_data()}
    (defs / NAME / COMPONENT_FILE).write_text(yaml.safe_dump(instance, sort_keys=False))
    return find_project(root)


def hourly_dataset_data() -> dict:
    """The dataset's spec (a Dataset component's attributes): partitioned by its `event_hour` timestamp,
    each hour one validation bucket."""
    return {
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
        "reconciliation": [{"column": "views", "filter": "event_type = 'start'", "expression": "count(1)"}],
    }
