"""Hostile configuration is refused before it reaches the filesystem or SQL, naming what is wrong."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest

from backfill_platform.components.registry import package_project, project_specs
from backfill_platform.lakehouse.tables import table_id
from backfill_platform.pipeline.archive.stream_archive import archive_for
from backfill_platform.pipeline.ledger import ledger as ledger_module
from backfill_platform.specs.archive_location import ARCHIVE_ROOTS_ENV
from backfill_platform.specs.common import check_catalog_name
from backfill_platform.specs.stream import StreamSpec
from backfill_platform.specs.yaml_guard import MAX_SPEC_DEPTH, check_folder
from backfill_platform_tests.support import hostile
from backfill_platform_tests.support.projects import defs_folder, load_project, write_project
from backfill_platform_tests.support.specs import mutated

STREAM = "type: backfill_platform.components.Stream\nattributes:\n"


def refused(tmp_path: Path, spec: dict) -> str:
    """The refusal of a project whose one component, `hostile`, is `spec`."""
    return hostile.refused(hostile.project_with(tmp_path, {"hostile": spec}), "hostile")


def loaded(tmp_path: Path, spec: dict) -> StreamSpec:
    """The stream `spec`, loaded from a project of its own."""
    return load_project(write_project(tmp_path, [spec])).streams[spec["name"]]


def refused_yaml(tmp_path: Path, attributes: str) -> str:
    """The refusal of a project whose Stream component `hostile` has `attributes` as its YAML text."""
    project = write_project(tmp_path, [])
    path = defs_folder(project.root) / "hostile" / "defs.yaml"
    hostile.write_yaml(path.parent, path.name, STREAM + attributes)
    return hostile.refused(project, "hostile")


# --- archive locations ---------------------------------------------------------------------------


@pytest.mark.parametrize("location", ["../../../../etc", "/etc", "archive/../../outside"])
def test_archive_locations_outside_the_data_roots_are_refused(tmp_path, data_dir, location):
    message = refused(tmp_path, mutated(archive__location=location))
    assert "field 'archive.location'" in message and "outside the configured data roots" in message


def test_an_outside_location_is_allowed_by_the_environment_only(tmp_path, data_dir, monkeypatch):
    outside = tmp_path / "elsewhere"
    refused(tmp_path, mutated(archive__location=str(outside)))
    # A spec cannot grant itself the outside: the old field is refused, naming the operator's setting.
    message = refused(
        tmp_path, mutated(archive__location=str(outside), archive__allow_outside_data_roots=True)
    )
    assert "'allow_outside_data_roots' is no longer a spec field" in message
    assert ARCHIVE_ROOTS_ENV in message
    monkeypatch.setenv(ARCHIVE_ROOTS_ENV, str(tmp_path))
    allowed = loaded(tmp_path, mutated(archive__location=str(outside)))
    assert archive_for(allowed).root == outside.resolve()
    assert loaded(tmp_path, mutated(archive__location="archive/x/../y")).archive.location == "archive/x/../y"
    # The setting is read again when the archive is opened: withdrawn, the folder is refused there too.
    monkeypatch.delenv(ARCHIVE_ROOTS_ENV)
    with pytest.raises(ValueError, match="outside the configured data roots"):
        archive_for(allowed)


def test_a_location_changed_after_load_is_refused_at_the_filesystem(data_dir, playback):
    escaped = playback.model_copy(
        update={"archive": playback.archive.model_copy(update={"location": "../../../../etc"})}
    )
    with pytest.raises(ValueError, match="outside the configured data roots"):
        archive_for(escaped)


# --- durations -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("allowed_lateness", -28800, "negative"),
        ("allowed_lateness", "-8h", "not a duration"),
        ("allowed_lateness", "99999999d", "exceeds the maximum"),
        ("allowed_lateness", "9999999999d", "too large"),
        ("allowed_lateness", 10**20, "too large"),
        ("clock_skew", "2d", "exceeds the maximum"),
        ("clock_skew", -1, "negative"),
        ("refresh_horizon", "99999999d", "exceeds the maximum"),
        ("first_partition", "0001-01-01", "not between"),
    ],
)
def test_negative_or_absurd_durations_are_refused_at_load(tmp_path, data_dir, field, value, reason):
    message = refused(tmp_path, mutated(**{field: value}))
    assert f"field '{field}'" in message and reason in message


def test_a_negative_lateness_never_reaches_a_run(data_dir):
    with pytest.raises(ValueError, match="negative"):
        StreamSpec.model_validate(mutated(allowed_lateness=-28800))


# --- YAML ----------------------------------------------------------------------------------------


def test_deeply_nested_yaml_is_refused_clearly(tmp_path):
    message = refused_yaml(tmp_path, "  name: " + "[" * 100_000 + "]" * 100_000 + "\n")
    assert f"nested deeper than {MAX_SPEC_DEPTH} levels" in message


def test_an_alias_bomb_is_refused_before_it_is_expanded(tmp_path):
    lines = ['  a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"  a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    assert "YAML nodes" in refused_yaml(tmp_path, "\n".join(lines) + "\n")


def test_a_huge_spec_file_is_refused(tmp_path):
    assert "larger than a spec may be" in refused_yaml(tmp_path, "  description: " + "x" * (2 << 20) + "\n")


def test_the_demo_spec_passes_the_shape_checks():
    import importlib

    defs = importlib.import_module(package_project().defs_module)
    check_folder(Path(defs.__file__).parent)  # what the code location runs before Dagster parses
    specs = project_specs(package_project())
    assert sorted([*specs.streams, *specs.datasets]) == [
        "attributed_plays",
        "impressions",
        "playback",
        "playback_hourly",
        "plays_new_york",
        "views_per_title",
    ]


# --- catalog names and SQL literals --------------------------------------------------------------


@pytest.mark.parametrize("name", ["lake'; DROP TABLE x --", "lake.prod", "la`ke", "1lake", "", "lake name"])
def test_catalog_names_with_quotes_or_dots_are_refused(name):
    with pytest.raises(ValueError, match="BACKFILL_PLATFORM_CATALOG_NAME"):
        check_catalog_name(name)


def test_no_table_identifier_is_built_from_an_unsafe_catalog_name():
    class Conf:
        def get(self, key):
            assert key == "spark.sql.defaultCatalog"
            return "lake' OR '1'='1"

    class FakeSpark:
        conf = Conf()

    with pytest.raises(ValueError, match="not a safe identifier"):
        table_id(FakeSpark(), "raw", "playback_events")
    assert check_catalog_name("lake") == "lake"


def test_the_ledger_builds_no_sql_literal_by_hand():
    """Values reach the ledger's queries as Spark Column expressions; the SQL text it builds holds
    only checked identifiers and DDL from its own dataclasses, never a quoted interpolation."""
    tree = ast.parse(Path(ledger_module.__file__).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            texts = [v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
            for before, after in itertools.pairwise(texts):
                assert not (before.endswith("'") and after.startswith("'")), ast.unparse(node)
