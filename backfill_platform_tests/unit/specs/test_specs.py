"""Spec loading: the demo spec, every kind of invalid spec, hostile names, a team's project."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from backfill_platform.components.registry import demo_spec_data, package_project, project_specs
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.yaml_guard import SpecError
from backfill_platform_tests.support.hostile import project_with, refused
from backfill_platform_tests.support.projects import load_project, write_project
from backfill_platform_tests.support.session import REPO_ROOT
from backfill_platform_tests.support.specs import VALID, mutated


def test_demo_spec_loads_with_its_versions():
    spec = project_specs(package_project()).streams["playback"]
    assert spec.allowed_lateness.total_seconds() == 8 * 3600
    assert [v.version for v in spec.schema_versions] == [1, 2]
    assert spec.latest.fields["device_type"] == "string"
    assert spec.events_table == "playback_events"


@pytest.mark.parametrize(
    ("changes", "field", "reason"),
    [
        ({"allowed_lateness": "eight hours"}, "allowed_lateness", "not a duration"),
        ({"event_id_field": KeyError}, "event_id_field", "Field required"),
        ({"partition_grain": "week"}, "partition_grain", "'day'"),
        ({"archive__layout": "%Y/%m/%d"}, "archive.layout", "%H"),
        ({"max_quarantine_ratio": 2}, "max_quarantine_ratio", "less than or equal"),
        ({"schema_versions__0__upcast": []}, "<root>", "upcasts to"),
        (
            {"schema_versions__0__fields__position_sec": "float128"},
            "schema_versions.0.fields.position_sec",
            "type",
        ),
        (
            {"schema_versions__0__match": {"field": "schema_version"}},
            "schema_versions.0.match",
            "exactly one",
        ),
        ({"archive__location_typo": "x"}, "archive.location_typo", "Extra inputs"),
        (
            {"schema_versions__0__upcast": [{"rename": {"from": "nope", "to": "device_type"}}]},
            "<root>",
            "unknown field 'nope'",
        ),
        (
            {"schema_versions__0__upcast": [{"rename": {"from": "device"}}]},
            "schema_versions.0.upcast.0.rename.to",
            "Field required",
        ),
        (
            {"schema_versions__0__upcast": [{"drop": "device", "cast": {"field": "device", "type": "long"}}]},
            "schema_versions.0.upcast.0",
            "exactly one of rename/default/cast/drop, got ['cast', 'drop']",
        ),
        (
            {"schema_versions__0__upcast": [{"cast": {"field": "device", "type": "float128"}}]},
            "schema_versions.0.upcast.0.cast.type",
            "not a field type",
        ),
    ],
)
def test_invalid_spec_names_file_field_and_reason(tmp_path, changes, field, reason):
    message = refused(project_with(tmp_path, {"broken": mutated(**changes)}), "broken")
    assert f"field '{field}'" in message
    assert reason in message


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"name": "playback; DROP TABLE x"}, "name"),
        ({"name": "Playback"}, "name"),
        ({"event_id_field": "id`)--"}, "event_id_field"),
        ({"event_time__field": "a..b"}, "event_time.field"),
        ({"event_time__field": "context.Device"}, "event_time.field"),
        ({"schema_versions__1__fields__bad name": "string"}, "schema_versions.1.fields.bad name"),
        ({"schema_versions__0__match__field": "x' or '1'='1"}, "schema_versions.0.match.field"),
    ],
)
def test_hostile_names_are_refused(tmp_path, changes, field):
    message = refused(project_with(tmp_path, {"hostile": mutated(**changes)}), "hostile")
    assert "not a safe identifier" in message and f"field '{field}'" in message


def test_a_team_s_specs_are_the_components_of_its_project(tmp_path):
    project = write_project(tmp_path, [mutated(name="clicks", archive__location="archive/clicks")])
    specs = load_project(project)
    assert list(specs.streams) == ["clicks"] and specs.datasets == {}
    assert specs.streams["clicks"].archive.location == "archive/clicks"


def test_a_stream_declared_twice_is_refused(tmp_path):
    project = project_with(tmp_path, {"first": VALID, "again": VALID})
    with pytest.raises(SpecError, match="field 'name': stream 'playback' is declared twice"):
        load_project(project)


def test_the_reference_page_is_rewritten_between_its_markers(tmp_path):
    from backfill_platform.specs.reference_page import BEGIN, END, markdown_reference, rewrite

    page = tmp_path / "spec-reference.md"
    page.write_text(f"# Spec reference\n\nintro\n\n{BEGIN}\nstale\n{END}\n\nafter\n")
    rewrite(page)
    assert page.read_text() == f"# Spec reference\n\nintro\n\n{markdown_reference()}\n\nafter\n"


def test_the_docs_spec_reference_is_the_one_generated_from_the_models():

    from backfill_platform.specs.reference_page import markdown_reference

    page = (REPO_ROOT / "docs" / "spec-reference.md").read_text()
    assert markdown_reference() in page, (
        "regenerate it: python -m backfill_platform.specs.reference_page docs/spec-reference.md"
    )


def test_an_absent_bucket_follows_the_grain():
    """Local days and hourly datasets have one bucket, the partition: it is the default; UTC days keep `hour`,
    and without an hour column the refusal says both ways out."""
    new_york = demo_spec_data("plays_new_york")
    del new_york["bucket"]
    assert DatasetSpec.model_validate(new_york).bucket == "partition"

    hourly = demo_spec_data("plays_new_york")
    del hourly["bucket"], hourly["partition_timezone"]
    hourly["columns"]["event_date"] = "timestamp"
    assert DatasetSpec.model_validate(hourly).bucket == "partition"

    daily = demo_spec_data("views_per_title")
    assert DatasetSpec.model_validate(daily).bucket == "hour"  # its bucket_column: per hour of the day
    del daily["bucket_column"], daily["key_columns"][1], daily["columns"]["event_hour"]
    with pytest.raises(ValidationError) as refused:
        DatasetSpec.model_validate(daily)
    assert "bucket_column is required with bucket: hour" in str(refused.value)
    assert "write `bucket: partition`" in str(refused.value)
