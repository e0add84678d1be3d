"""Specs evolve by adding fields; the tables follow (Iceberg `ADD COLUMNS`), never dropping a field.

A small stream of its own (`playback_evolving`, a copy of playback) and a dataset on it are materialized
through Dagster — events, the active shadow and production — for one day as specified, then the stream
gains schema version 3 with a new field (`app_version`) and the dataset a new output column derived
from it (`app_versions`), and the next day is materialized with the new specs: every table gains its
column, the first day's rows read back null for it, the second day's carry the values, and re-running
the day gives identical rows. A changed type is refused before anything is written.
"""

from __future__ import annotations

import gzip
from datetime import date, datetime, timedelta
from pathlib import Path

import pytest
from dagster import materialize
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from backfill_platform.components.registry import demo_spec_data
from backfill_platform.defs.views_per_title.transform import views_v2
from backfill_platform.devtools.generator.corpus import v2
from backfill_platform.lakehouse.schema import SchemaConflict
from backfill_platform.pipeline.archive.stream_archive import archive_for
from backfill_platform.pipeline.events.assets import build_events_asset
from backfill_platform.pipeline.events.ingest import ingest_window
from backfill_platform.pipeline.hour_mapping import ReadPlan
from backfill_platform.pipeline.names import events_table, production_table, shadow_table
from backfill_platform.pipeline.promotion.assets import build_production_asset
from backfill_platform.pipeline.shadow.assets import build_shadow_asset
from backfill_platform.pipeline.tables.dataset_tables import ensure_dataset_table
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.durations import DAY, day_bounds, midnight
from backfill_platform.specs.stream import StreamSpec
from backfill_platform_tests.support.session import range_tags

STREAM, DATASET = "playback_evolving", "views_evolving"
DAY1, DAY2 = date(2026, 10, 1), date(2026, 10, 2)


def views_with_app_versions(events: DataFrame) -> DataFrame:
    """views_v2 plus the new output column: distinct app versions among the title's events of the hour."""
    keys = ["event_date", "event_hour", "title_id"]
    apps = (
        events.where(F.col("event_type").isin("start", "stop"))
        .groupBy(
            F.to_date("event_time").alias("event_date"), F.hour("event_time").alias("event_hour"), "title_id"
        )
        .agg(F.countDistinct("app_version").alias("app_versions"))
    )
    return views_v2(events).join(apps, keys)


def stream_spec(evolved: bool, app_version_type: str = "string") -> StreamSpec:
    raw = demo_spec_data("playback")
    raw.update(name=STREAM, allow_empty_hours=True)  # a tiny archive: most hours hold no file
    raw["archive"]["location"] = f"archive/{STREAM}"
    if evolved:  # how specs evolve: a new schema version, the older ones upcast to it
        for version in raw["schema_versions"]:
            # A defaulted field takes the latest version's type.
            version["upcast"] = [
                *version.get("upcast", []),
                {"default": {"field": "app_version", "value": "0"}},
            ]
        latest = raw["schema_versions"][-1]
        raw["schema_versions"].append(
            {
                "version": 3,
                "match": {"field": "schema_version", "equals": 3},
                "event_time_format": "epoch_millis",
                "fields": {**latest["fields"], "app_version": app_version_type},
            }
        )
    return StreamSpec.model_validate(raw)


def dataset_spec(evolved: bool, views_type: str = "long") -> DatasetSpec:
    raw = demo_spec_data("views_per_title")
    raw.update(name=DATASET, source_stream=STREAM, active_version="v2")
    raw["columns"]["views"] = views_type
    transform = "backfill_platform.defs.views_per_title.transform:views_v2"
    if evolved:
        raw["columns"]["app_versions"] = "long"
        transform = f"{__name__}:views_with_app_versions"
    raw["versions"] = {"v2": {"transform": transform}}
    return DatasetSpec.model_validate(raw)


def write_archive(root: Path) -> None:
    """Day 1: schema version 2 only. Day 2: versions 2 and 3 (with `app_version`). Each event is
    archived in its own hour; a start and a stop per title and hour."""

    def hour_file(at: datetime, lines: list[str]) -> None:
        path = root / at.strftime("%Y/%m/%d/%H") / "part-0001.jsonl.gz"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(gzip.compress("".join(line + "\n" for line in lines).encode(), mtime=0))

    day1 = midnight(DAY1)
    day2 = day1 + DAY
    hour_file(
        day1 + timedelta(hours=5),
        [
            v2("d1-a", day1 + timedelta(hours=5, minutes=1), event_type="start", user_id="u1"),
            v2("d1-b", day1 + timedelta(hours=5, minutes=9), event_type="stop", position_sec=60),
            v2("d1-c", day1 + timedelta(hours=5, minutes=20), event_type="start", title_id="t2"),
        ],
    )
    hour_file(
        day2 + timedelta(hours=12),
        [
            v2("d2-a", day2 + timedelta(hours=12, minutes=1), event_type="start", user_id="u1"),
            v2("d2-b", day2 + timedelta(hours=12, minutes=2), schema_version=3, app_version="9.1",
               event_type="start", user_id="u2"),
            v2("d2-c", day2 + timedelta(hours=12, minutes=30), schema_version=3, app_version="9.2",
               event_type="stop", position_sec=30),
        ],
    )  # fmt: skip
    at = day2 + timedelta(hours=15, minutes=5)
    hour_file(at, [v2("d2-d", at, schema_version=3, app_version="9.2", title_id="t3")])


def run_day(spark_resource, stream: StreamSpec, dataset: DatasetSpec, day: date) -> None:
    """Events, the active shadow and production of one day, in one run (what a backfill does)."""
    assets = [
        build_events_asset(stream),
        build_shadow_asset(dataset, [stream], dataset.active_version),
        build_production_asset(dataset, [stream]),
    ]
    result = materialize(assets, resources={"spark": spark_resource}, tags=range_tags(day, day))
    assert result.success


def rows(spark, identifier: str) -> list[dict]:
    return sorted((r.asDict() for r in spark.table(identifier).collect()), key=repr)


@pytest.fixture(scope="module")
def tables(spark):
    return {
        "events": events_table(spark, stream_spec(False)),
        "shadow": shadow_table(spark, dataset_spec(False), "v2"),
        "production": production_table(spark, dataset_spec(False)),
    }


@pytest.fixture(scope="module")
def evolved(spark, spark_resource, data_dir, tables) -> dict:
    """Day 1 with the specs as they were, day 2 with the evolved ones; what each table held after each."""
    write_archive(data_dir / "archive" / STREAM)
    run_day(spark_resource, stream_spec(False), dataset_spec(False), DAY1)
    before = {name: spark.table(identifier).columns for name, identifier in tables.items()}
    run_day(spark_resource, stream_spec(True), dataset_spec(True), DAY2)
    return {"columns_before": before, "rows": {name: rows(spark, t) for name, t in tables.items()}}


def test_events_table_gains_the_new_field(evolved, spark, tables):
    assert "app_version" not in evolved["columns_before"]["events"]
    schema = {f.name: f.dataType.simpleString() for f in spark.table(tables["events"]).schema}
    assert schema["app_version"] == "string"
    by_id = {r["event_id"]: r for r in evolved["rows"]["events"]}
    assert set(by_id) == {"d1-a", "d1-b", "d1-c", "d2-a", "d2-b", "d2-c", "d2-d"}
    # Written before the field existed: null. Written after: the value, or the upcast default.
    assert {by_id[i]["app_version"] for i in ("d1-a", "d1-b", "d1-c")} == {None}
    assert {i: by_id[i]["app_version"] for i in ("d2-a", "d2-b", "d2-c", "d2-d")} == {
        "d2-a": "0", "d2-b": "9.1", "d2-c": "9.2", "d2-d": "9.2"
    }  # fmt: skip
    assert by_id["d2-b"]["_schema_version"] == 3 and by_id["d1-b"]["position_sec"] == 60


def test_shadow_and_production_gain_the_new_output_column(evolved, spark, tables):
    for name in ("shadow", "production"):
        assert "app_versions" not in evolved["columns_before"][name]
        schema = {f.name: f.dataType.simpleString() for f in spark.table(tables[name]).schema}
        assert schema["app_versions"] == "bigint", name
    got = {
        (r["event_date"], r["event_hour"], r["title_id"]): (r["views"], r["watch_seconds"], r["app_versions"])
        for r in evolved["rows"]["shadow"]
    }
    assert got == {
        (DAY1, 5, "t1"): (1, 60, None),  # written before the column existed
        (DAY1, 5, "t2"): (1, 0, None),
        (DAY2, 12, "t1"): (2, 30, 3),  # "0" (upcast default), "9.1", "9.2"
        (DAY2, 15, "t3"): (0, 42, 1),
    }
    assert evolved["rows"]["production"] == evolved["rows"]["shadow"]


def test_rerunning_the_day_gives_identical_rows(evolved, spark, spark_resource, tables):
    run_day(spark_resource, stream_spec(True), dataset_spec(True), DAY2)
    assert {name: rows(spark, t) for name, t in tables.items()} == evolved["rows"]


def test_a_changed_type_is_refused_naming_table_column_and_types(evolved, spark, tables):
    stream = stream_spec(True, app_version_type="long")
    with pytest.raises(SchemaConflict) as refused:
        ingest_window(spark, stream, archive_for(stream), ReadPlan.for_range(stream, *day_bounds(DAY2)))
    message = str(refused.value)
    assert tables["events"] in message and "'app_version'" in message
    assert "is string in the table" in message and "declares bigint" in message
    conflict = r"'views' is bigint in the table but the spec now declares double"
    with pytest.raises(SchemaConflict, match=conflict):
        ensure_dataset_table(spark, dataset_spec(True, views_type="double"), tables["shadow"])
    # Nothing was written or altered.
    assert rows(spark, tables["events"]) == evolved["rows"]["events"]
    assert rows(spark, tables["shadow"]) == evolved["rows"]["shadow"]
    assert spark.table(tables["events"]).schema["app_version"].dataType.simpleString() == "string"
