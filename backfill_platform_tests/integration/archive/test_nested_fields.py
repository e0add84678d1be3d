"""Nested fields: declared by their path, typed strictly, moved by upcasts, stored flattened and named
in a dataset's rules.

The session's generated archive is rewritten so that its version-2 records carry the device and the
country inside a `context` object (`{"context": {"device": {"type": "tv"}, "geo": {"country": "BR"}}}`),
as application events usually do; version-1 records keep their flat `device`, which the spec moves to
`context.device.type` by a rename. Every other line (defects included) is copied unchanged, so the
events must be the JSON-lines stream's, column for column, and the demo dataset built on the nested
stream must pass its reconciliation.
"""

from __future__ import annotations

import gzip
import json
from datetime import timedelta
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from backfill_platform.components.registry import demo_spec_data
from backfill_platform.pipeline.archive.stream_archive import archive_for
from backfill_platform.pipeline.events.assets import build_events_asset
from backfill_platform.pipeline.events.ingest import ingest_window
from backfill_platform.pipeline.hour_mapping import ReadPlan
from backfill_platform.pipeline.names import events_table, quarantine_table
from backfill_platform.pipeline.shadow.assets import build_shadow_asset
from backfill_platform.specs.durations import midnight
from backfill_platform.specs.references import dataset_problems
from backfill_platform.specs.stream import StreamSpec
from backfill_platform_tests.support.datasets import dataset, run
from backfill_platform_tests.support.session import START

# Archives in pytest's temporary folders: the operator's setting allows them (BACKFILL_PLATFORM_ARCHIVE_ROOTS).
pytestmark = pytest.mark.usefixtures("archive_roots_in_tmp")

D2, D4 = START + timedelta(days=1), START + timedelta(days=3)
NAME = "nested_playback"


def nested_spec(location: str, name: str = NAME, **archive) -> StreamSpec:
    raw = demo_spec_data("playback")
    raw["name"] = name
    raw["archive"].update(location=location, **archive)
    v1, v2 = raw["schema_versions"]
    v1["upcast"] = [
        {"rename": {"from": "device", "to": "context.device.type"}},
        {"default": {"field": "context.geo.country", "value": "unknown"}},
    ]
    v2["fields"] = {
        "user_id": "string",
        "title_id": "string",
        "event_type": "string",
        "position_sec": "long",
        "context.device.type": "string",
        "context.geo.country": "string",
    }
    return StreamSpec.model_validate(raw)


def _nest(text: str) -> str:
    try:
        record = json.loads(text)
    except json.JSONDecodeError:
        return text
    if not isinstance(record, dict) or record.get("schema_version") != 2:
        return text
    record["context"] = {
        "device": {"type": record.pop("device_type", None)},
        "geo": {"country": record.pop("country", None)},
    }
    return json.dumps(record)


@pytest.fixture(scope="module")
def nested(data_dir: Path, events_materialized) -> StreamSpec:
    source, target = data_dir / "archive" / "playback", data_dir / "archive" / NAME
    for path in sorted(source.rglob("*.gz")):
        out = target / path.relative_to(source)
        out.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(path, "rb") as lines:
            try:
                data = lines.read()
            except (EOFError, OSError):
                continue
        text = data.decode("utf-8", "surrogateescape").split("\n")
        out.write_bytes(gzip.compress("\n".join(_nest(t) for t in text).encode("utf-8", "surrogateescape")))
    return nested_spec(f"archive/{NAME}")


def test_nested_fields_land_in_their_columns_as_the_flat_stream_had_them(
    spark, spark_resource, playback, nested
):
    result = run(spark_resource, [build_events_asset(nested)], D2, D4)
    assert result.success and all(c.passed for c in result.get_asset_check_evaluations())
    window = (F.col("event_time") >= midnight(D2)) & (F.col("event_time") < midnight(D4 + timedelta(days=1)))
    columns = [
        "event_id",
        "event_time",
        "user_id",
        "title_id",
        "event_type",
        "position_sec",
        "_schema_version",
    ]
    ours = (
        spark.table(events_table(spark, nested))
        .where(window)
        .select(
            *columns,
            F.col("context_device_type").alias("device_type"),
            F.col("context_geo_country").alias("country"),
        )
    )
    reference = (
        spark.table(events_table(spark, playback)).where(window).select(*columns, "device_type", "country")
    )
    assert ours.count() == reference.count() > 0
    assert ours.exceptAll(reference).count() == 0 and reference.exceptAll(ours).count() == 0
    versions = {r["_schema_version"] for r in ours.select("_schema_version").distinct().collect()}
    assert versions == {1, 2}  # the rename (v1) and the nested path (v2) both reached the column


def test_a_dataset_names_nested_columns_in_its_rules_and_reconciles(spark_resource, nested):
    views = dataset(
        "views_nested",
        source_stream=NAME,
        expected_rows={
            "filter": "event_type IN ('start', 'stop') AND context_device_type IS NOT NULL",
            "expression": "count(DISTINCT title_id)",
        },
    )
    assert dataset_problems(views, {NAME: nested}) == []
    wrong = dataset("views_nested_wrong", source_stream=NAME,
                    expected_rows={"expression": "count(DISTINCT context_device)"})  # fmt: skip
    (problem,) = dataset_problems(wrong, {NAME: nested})
    assert "context_device" in problem.reason and "context_device_type" in problem.reason
    result = run(
        spark_resource, [build_events_asset(nested), build_shadow_asset(views, [nested], "v2")], D2, D4
    )
    checks = [
        c for c in result.get_asset_check_evaluations() if "views_nested" in c.asset_key.to_user_string()
    ]
    assert checks and all(c.passed for c in checks)


def test_a_nested_field_of_the_wrong_shape_is_an_invalid_field(tmp_path, spark):
    spec = nested_spec(str(tmp_path / "archive"), "nested_shapes")
    hour = midnight(START) + timedelta(hours=9)
    base = {"schema_version": 2, "event_time": int((hour + timedelta(minutes=5)).timestamp() * 1000),
            "user_id": "u", "title_id": "t", "event_type": "start", "position_sec": 3}  # fmt: skip
    records = [
        {
            **base,
            "event_id": "ok",
            "context": {"device": {"type": "tv", "model": "x"}, "geo": {"country": "BR"}},
        },
        {**base, "event_id": "string_context", "context": "tv"},
        {**base, "event_id": "string_device", "context": {"device": "tv", "geo": {"country": "BR"}}},
        {**base, "event_id": "no_context"},
        {**base, "event_id": "number_as_text", "context": {"device": {"type": 7}}},
        # Version 1 declares nothing inside `context`: a `context` of its own is none of its fields.
        {
            "event_id": "v1_own_context",
            "event_time": f"{hour + timedelta(minutes=7):%Y-%m-%dT%H:%M:%SZ}",
            "user_id": "u",
            "title_id": "t",
            "event_type": "start",
            "position_sec": 3,
            "device": "tv",
            "context": "legacy",
        },
    ]
    folder = tmp_path / "archive" / hour.strftime(spec.archive.layout)
    folder.mkdir(parents=True)
    (folder / "part.jsonl.gz").write_bytes(
        gzip.compress("".join(json.dumps(r) + "\n" for r in records).encode())
    )
    ingest_window(
        spark,
        spec,
        archive_for(spec),
        ReadPlan.for_range(spec, midnight(START), midnight(START) + timedelta(days=1)),
    )
    rows = {r["event_id"]: r for r in spark.table(events_table(spark, spec)).collect()}
    assert set(rows) == {"ok", "no_context", "number_as_text", "v1_own_context"}
    assert rows["v1_own_context"]["context_device_type"] == "tv"
    assert (rows["ok"]["context_device_type"], rows["ok"]["context_geo_country"]) == ("tv", "BR")
    assert rows["no_context"]["context_device_type"] is None
    assert rows["number_as_text"]["context_device_type"] == "7"  # a string field keeps the JSON text
    held = {
        r["event_id"]: (r["reason"], r["detail"])
        for r in spark.table(quarantine_table(spark, spec)).collect()
    }
    assert held == {
        "string_context": ("invalid_field", "context"),
        "string_device": ("invalid_field", "context.device"),
    }


def test_a_replay_sends_nested_fields_as_nested_objects(spark, spark_resource, nested):
    from backfill_platform.lakehouse.resources import open_catalog
    from backfill_platform.pipeline.replay.source import EventSource

    run(spark_resource, [build_events_asset(nested)], D4, D4)
    source = EventSource(open_catalog(), nested, D4, D4 + timedelta(days=1))
    bodies = [json.loads(event.data) for event in source.events()]
    rows = spark.table(events_table(spark, nested)).where(F.to_date("event_time") == D4).collect()
    assert len(bodies) == len(rows) > 0
    by_id = {r["event_id"]: r for r in rows}
    for body in bodies:
        row = by_id[body["event_id"]]
        assert body["context"] == {
            "device": {"type": row["context_device_type"]},
            "geo": {"country": row["context_geo_country"]},
        }
        assert "context_device_type" not in body
