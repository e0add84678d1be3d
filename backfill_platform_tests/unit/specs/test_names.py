"""Every name is checked whole: a name ending in a newline is refused, naming the field.

Python's `re` `$` matches before a final newline, so `re.match(r"^[a-z_]+$", "v1\\n")` succeeds; such a
name loaded, reached Dagster's asset keys or Spark's SQL (where the newline is whitespace, so `v1\\n` names
the table of `v1`), and died there. Every name check goes through `specs.common.check_name` (`fullmatch`).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import backfill_platform
from backfill_platform.components.registry import demo_spec_data
from backfill_platform.specs.common import check_catalog_name, check_field_path, check_identifier
from backfill_platform_tests.support.hostile import project_with, refused
from backfill_platform_tests.support.projects import load_project
from backfill_platform_tests.support.specs import mutated

NL = "\n"


def components(spec: dict) -> dict[str, dict]:
    """A project's components around `spec`: a dataset reads the demo stream, which a stream replaces."""
    return {"hostile": spec} if "schema_versions" in spec else {"playback": mutated(), "hostile": spec}


def loads(tmp_path: Path, spec: dict) -> bool:
    """Whether a project holding `spec` loads it."""
    specs = load_project(project_with(tmp_path, components(spec)))
    return spec["name"] in (specs.streams if "schema_versions" in spec else specs.datasets)


def refused_spec(tmp_path: Path, spec: dict) -> str:
    """The refusal of a project holding `spec` as its component `hostile`."""
    return refused(project_with(tmp_path, components(spec)), "hostile")


def _stream_with_field_key(suffix: str) -> dict:
    spec = mutated()
    fields = spec["schema_versions"][1]["fields"]
    fields["title_id" + suffix] = fields.pop("title_id")
    return spec


def _iceberg_archive(table: str = "raw.playback_archive", column: str = "event_time") -> dict:
    spec = mutated()
    spec["archive"] = {"iceberg_table": table, "ingestion_time_column": column}
    return spec


STREAMS = {
    "name": lambda s: mutated(name="playback" + s),
    "event_id_field": lambda s: mutated(event_id_field="event_id" + s),
    "event_time.field": lambda s: mutated(event_time__field="event_time" + s),
    "schema_versions.0.match.field": lambda s: mutated(schema_versions__0__match__field="schema_version" + s),
    "schema_versions.1.fields": _stream_with_field_key,
    "live_kinesis_stream": lambda s: mutated(live_kinesis_stream="playback-events" + s),
    "backfill_kinesis_streams.0": lambda s: mutated(backfill_kinesis_streams=["playback-backfill" + s]),
    "live_kafka_topic": lambda s: mutated(live_kafka_topic="playback-events" + s),
    "backfill_kafka_topics.0": lambda s: mutated(backfill_kafka_topics=["playback-backfill" + s]),
}


@pytest.mark.parametrize("field", STREAMS)
def test_a_stream_name_ending_in_a_newline_is_refused_naming_the_field(tmp_path, data_dir, field):
    assert loads(tmp_path, STREAMS[field](""))  # the same spec, no newline
    message = refused_spec(tmp_path, STREAMS[field](NL))
    assert f"field '{field}" in message, message
    assert "\\n" in message  # the value is shown with its newline made visible


def _dataset(**changes) -> dict:
    spec = demo_spec_data("views_per_title")
    spec.update(changes)
    return spec


def _renamed_key(mapping: str, key: str):
    def change(suffix: str) -> dict:
        spec = _dataset()
        spec[mapping] = {(k + suffix if k == key else k): v for k, v in spec[mapping].items()}
        if mapping == "versions" and key == spec["active_version"]:
            spec["active_version"] = key  # the active one keeps its own name: only the key is hostile
        return spec

    return change


DATASETS = {
    "name": lambda s: _dataset(name="views_per_title" + s),
    "active_version": lambda s: _dataset(active_version="v2" + s),
    "versions": _renamed_key("versions", "v1"),
    "columns": _renamed_key("columns", "views"),
    "key_columns.2": lambda s: _dataset(key_columns=["event_date", "event_hour", "title_id" + s]),
    "partition_column": lambda s: _dataset(partition_column="event_date" + s),
    "bucket_column": lambda s: _dataset(bucket_column="event_hour" + s),
    "source_stream": lambda s: _dataset(source_stream="playback" + s),
    "versions.v2.transform": lambda s: _dataset(
        versions={"v2": {"transform": "backfill_platform.defs.views_per_title.transform:views_v2" + s}}
    ),
}


@pytest.mark.parametrize("field", DATASETS)
def test_a_dataset_name_ending_in_a_newline_is_refused_naming_the_field(tmp_path, data_dir, field):
    assert loads(tmp_path, DATASETS[field](""))
    message = refused_spec(tmp_path, DATASETS[field](NL))
    assert f"field '{field}" in message, message


@pytest.mark.parametrize(
    ("check", "value"),
    [
        (check_identifier, "v1"),
        (check_field_path, "context.device.type"),
        (check_catalog_name, "lake"),
    ],
)
@pytest.mark.parametrize("suffix", ["\n", "\r\n", " ", "\n\n"])
def test_the_name_checks_refuse_any_trailing_whitespace(check, value, suffix):
    assert check(value) == value
    with pytest.raises(ValueError, match="is not"):
        check(value + suffix)


def test_a_command_name_is_refused_naming_its_option():
    with pytest.raises(ValueError, match=r"^version: 'v1\\n' is not a safe identifier"):
        check_identifier("v1\n", "version")


def test_no_name_check_anchors_with_dollar():
    """A pattern of the package's own code that ends in `$` would pass a final newline with `re.match`:
    names are matched whole (`check_name`, `fullmatch`). Spark's patterns (`rlike`, Java regexes) are not
    names and are passed to Spark as strings, never compiled here."""
    root = Path(backfill_platform.__file__).parent
    offenders = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            func = ast.unparse(node.func)
            pattern = None
            if func in ("re.compile", "re.match", "re.search") and node.args:
                pattern = node.args[0]
            for keyword in node.keywords:
                if keyword.arg == "pattern" and func == "Field":
                    pattern = keyword.value
            text = pattern.value if isinstance(pattern, ast.Constant) else None
            if isinstance(text, str) and re.search(r"(?<!\\)\$\)?\Z", text):
                offenders.append(f"{path.relative_to(root)}:{node.lineno}: {text!r}")
    assert not offenders, offenders
