"""Spec loading: the demo spec, every kind of invalid spec, hostile names, discovery by env var."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from backfill_platform import settings
from backfill_platform.components.registry import package_project, project_specs
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.loader import (
    BUILTIN_SPECS_DIR,
    SpecError,
    builtin_spec_data,
    load_spec_file,
    load_specs,
)
from backfill_platform_tests.support.session import REPO_ROOT
from backfill_platform_tests.support.specs import VALID, mutated, write_spec


def test_demo_spec_loads_with_its_versions():
    spec = load_specs([BUILTIN_SPECS_DIR]).streams["playback"]
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
    path = write_spec(tmp_path, "broken", mutated(**changes))
    with pytest.raises(SpecError) as error:
        load_spec_file(path)
    message = str(error.value)
    assert str(path) in message
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
    path = write_spec(tmp_path, "hostile", mutated(**changes))
    with pytest.raises(SpecError, match="not a safe identifier") as error:
        load_spec_file(path)
    assert f"field '{field}'" in str(error.value)


def test_user_specs_are_found_through_the_environment(tmp_path, monkeypatch):
    write_spec(tmp_path, "clicks", mutated(name="clicks", archive__location="archive/clicks"))
    monkeypatch.setenv(settings.SPECS_ENV, str(tmp_path))
    specs = project_specs(package_project())
    assert {"playback", "clicks"} <= set(specs.streams)
    assert specs.streams["clicks"].archive.location == "archive/clicks"


def test_a_stream_declared_twice_is_refused(tmp_path, monkeypatch):
    write_spec(tmp_path, "again", VALID)
    monkeypatch.setenv(settings.SPECS_ENV, str(tmp_path))
    with pytest.raises(SpecError, match="declared twice"):
        project_specs(package_project())


def test_missing_spec_folder_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv(settings.SPECS_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(SpecError, match="does not exist"):
        project_specs(package_project())


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
    new_york = builtin_spec_data("plays_new_york")
    del new_york["bucket"]
    assert DatasetSpec.model_validate(new_york).bucket == "partition"

    hourly = builtin_spec_data("plays_new_york")
    del hourly["bucket"], hourly["partition_timezone"]
    hourly["columns"]["event_date"] = "timestamp"
    assert DatasetSpec.model_validate(hourly).bucket == "partition"

    daily = builtin_spec_data("views_per_title")
    assert DatasetSpec.model_validate(daily).bucket == "hour"  # its bucket_column: per hour of the day
    del daily["bucket_column"], daily["key_columns"][1], daily["columns"]["event_hour"]
    with pytest.raises(ValidationError) as refused:
        DatasetSpec.model_validate(daily)
    assert "bucket_column is required with bucket: hour" in str(refused.value)
    assert "write `bucket: partition`" in str(refused.value)
