"""Everything a spec names is checked at load: version markers, upcast targets, the dataset's source
stream, its SQL rules against the events table, its transforms (also code beside the spec, loaded without
PYTHONPATH; that they run on Spark's executors: integration/specs/test_spec_transforms.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from backfill_platform.components.registry import demo_spec_data, package_project, project_specs
from backfill_platform.specs.stream import events_columns
from backfill_platform.specs.transforms import SYNTHETIC_PREFIX
from backfill_platform_tests.support import hostile
from backfill_platform_tests.support.projects import defs_folder, load_project, write_project
from backfill_platform_tests.support.spec_transforms import (
    VERSIONS,
    write_transforms,
    write_transforms_beside_specs,
)
from backfill_platform_tests.support.specs import mutated

DATASET = demo_spec_data("views_per_title")


def dataset(**changes) -> dict:
    spec = yaml.safe_load(yaml.safe_dump(DATASET))
    spec.update(changes)
    return spec


def refused(parent: Path, failing: str, stream: dict | None = None, data: dict | None = None) -> str:
    """Load a project holding a stream and a dataset; the error must name the `failing` one's file."""
    components = {"playback": stream or mutated(), "views": data or dataset()}
    return hostile.refused(hostile.project_with(parent, components), failing)


# --- stream specs -----------------------------------------------------------------------------------


def test_a_mistyped_version_marker_matched_by_absence_is_refused(tmp_path):
    # Every record lacks `schema_verison`: all would be version 1, the v2 records misread.
    message = refused(tmp_path, "playback", stream=mutated(schema_versions__0__match__field="schema_verison"))
    assert "field 'schema_versions[0].match.field': unknown field 'schema_verison'" in message
    assert "every record would be version 1" in message and "'schema_version'" in message


def test_a_mistyped_version_marker_matched_by_value_is_refused(tmp_path):
    # No record carries `schema_verison`: every version-2 line would be `unknown_schema_version`.
    message = refused(tmp_path, "playback", stream=mutated(schema_versions__1__match__field="schema_verison"))
    assert "field 'schema_versions[1].match.field': unknown field 'schema_verison'" in message
    assert "did you mean 'schema_version'?" in message


def test_a_version_marker_that_is_the_event_id_field_is_refused(tmp_path):
    message = refused(tmp_path, "playback", stream=mutated(schema_versions__1__match__field="event_id"))
    assert "field 'schema_versions[1].match.field': 'event_id' is the event id or time field" in message


DEVICE, COUNTRY = mutated()["schema_versions"][0]["upcast"]


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"event_id_field": "user_id"}, "['user_id'] are the id/time fields (event_id_field"),
        ({"event_time__field": "title_id"}, "['title_id'] are the id/time fields (event_id_field"),
        (
            {"schema_versions__0__upcast": [{"rename": {"from": "device", "to": "device_typ"}}, COUNTRY]},
            "not fields of the latest version: ['device_typ']",
        ),
        (
            {"schema_versions__0__upcast": [DEVICE, {"default": {"field": "contry", "value": "x"}}]},
            "not fields of the latest version: ['contry']; missing: ['country']",
        ),
        (
            {"schema_versions__0__upcast": [{"rename": {"from": "devise", "to": "device_type"}}, COUNTRY]},
            "upcast step 1: rename of unknown field 'devise' (fields: ['device', 'event_type'",
        ),
    ],
)
def test_id_time_and_upcast_names_are_checked_against_the_versions(tmp_path, changes, named):
    message = refused(tmp_path, "playback", stream=mutated(**changes))
    assert named in message


# --- dataset specs ------------------------------------------------------------------------------------


def test_an_unknown_column_in_expected_rows_names_the_field_and_the_columns(tmp_path):
    rows = {"filter": "event_type IN ('start', 'stop')", "expression": "count(DISTINCT title)"}
    message = refused(tmp_path, "views", data=dataset(expected_rows=rows))
    assert "field 'expected_rows.expression': 'count(DISTINCT title)' names unknown column 'title'" in message
    assert "the events of stream 'playback' have ['event_id', 'event_time', " in message
    assert "'title_id', " in message and "'_ingestion_time']" in message


def test_an_unknown_column_in_a_reconciliation_filter_names_its_index(tmp_path):
    rules = DATASET["reconciliation"]
    data = dataset(reconciliation=[rules[0], {**rules[1], "filter": "event_typ = 'stop' AND devic = 'tv'"}])
    message = refused(tmp_path, "views", data=data)
    assert "field 'reconciliation[1].filter'" in message
    assert "names unknown columns 'event_typ', 'devic'" in message
    assert "reconciliation[0]" not in message


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("sum(", "does not parse as Spark SQL: Required keyword"),
        ("count(1", "does not parse as Spark SQL: Expecting )"),
        ("count(1); DROP TABLE prod.views", "contains a statement separator (';'), which a rule may not"),
        (
            "sum(position_sec) + (SELECT max(x) FROM t)",
            "must be one expression over the events, not SUBQUERY",
        ),
    ],
)
def test_an_unparseable_or_non_expression_rule_is_refused(tmp_path, expression, reason):
    rules = [{**DATASET["reconciliation"][0], "expression": expression}, DATASET["reconciliation"][1]]
    message = refused(tmp_path, "views", data=dataset(reconciliation=rules))
    assert f"field 'reconciliation[0].expression': {expression!r} {reason}" in message


def test_an_unknown_source_stream_names_the_dataset_file(tmp_path):
    message = refused(tmp_path, "views", data=dataset(source_stream="playbak"))
    assert "field 'source_stream': unknown stream 'playbak' (known: ['playback'])" in message


def test_an_unknown_transform_names_the_version(tmp_path):
    versions = {"v2": {"transform": "views_beside:nothing_here"}}
    data = dataset(versions=versions, active_version="v2")
    project = hostile.project_with(tmp_path, {"playback": mutated(), "views": data})
    beside = hostile.component_file(project, "views").parent / "views_beside.py"
    beside.write_text("def views(events):\n    return events\n")
    message = hostile.refused(project, "views")
    assert "field 'versions.v2.transform': transform 'views_beside:nothing_here' cannot be loaded" in message
    assert "has no 'nothing_here'" in message


def test_metadata_columns_and_spark_case_insensitivity_resolve(tmp_path):
    rows = {
        "filter": "Event_Type = 'start' AND _line_number > 0",
        "expression": "count(DISTINCT _source_file)",
    }
    specs = load_project(write_project(tmp_path, [mutated(), dataset(expected_rows=rows)]))
    assert specs.datasets["views_per_title"].expected_rows.model_dump(exclude_none=True) == rows


def test_the_built_in_specs_load_with_every_reference_resolved():
    specs = project_specs(package_project())
    views = specs.datasets["views_per_title"]
    assert views._source_path.is_file() and views.versions["v2"].load_transform().__name__ == "views_v2"
    assert [name for name, _ in events_columns(specs.streams["playback"])][:3] == [
        "event_id",
        "event_time",
        "user_id",
    ]


# --- transforms beside the spec -------------------------------------------------------------------------


def test_transforms_beside_the_spec_load_without_pythonpath(tmp_path, monkeypatch):
    monkeypatch.delenv("PYTHONPATH", raising=False)
    project = write_transforms_beside_specs(tmp_path)
    spec = load_project(project).datasets["views_per_title"]
    beside = spec._source_path.parent
    for name in VERSIONS:
        function = spec.versions[name].load_transform()
        assert function.__module__.startswith(SYNTHETIC_PREFIX), function.__module__
        assert function.__globals__["PREFIX"] == f"{name}:"
        assert str(beside) not in sys.path
    # Same file, same module (stable); another project's `team_views.py` is another module (unique).
    again = load_project(project).datasets["views_per_title"].versions["module"].load_transform()
    assert again is spec.versions["module"].load_transform()
    theirs_spec = dataset(versions={"v2": {"transform": VERSIONS["module"]}}, active_version="v2")
    other = write_project(tmp_path, [mutated(), theirs_spec])
    write_transforms(defs_folder(other.root) / "views_per_title")
    theirs = load_project(other).datasets["views_per_title"].versions["v2"].load_transform()
    assert theirs.__module__ != again.__module__
