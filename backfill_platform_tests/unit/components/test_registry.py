"""Which streams and datasets exist: the project's component tree, found from the working directory.

A team's project (as `backfill-platform init` writes it) holds its own components and none of the demo's;
outside any project the package's own (the demo) is read; a name declared twice is refused naming the
file, and a component that does not validate names the file, each field and its line.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from backfill_platform.components.project import init_project
from backfill_platform.components.registry import find_project, package_project, project_specs
from backfill_platform.specs.yaml_guard import SpecError
from backfill_platform_tests.support.specs import mutated, write_component


def team_project(parent: Path, name: str, streams: list[str]) -> Path:
    """A project by `backfill-platform init`, with a Stream component per name (the demo's spec renamed)."""
    root = parent / name
    init_project(root)
    for stream in streams:
        write_component(root / name / "defs", stream, mutated(name=stream))
    return root


def test_a_team_project_is_found_from_any_folder_below_it(tmp_path):
    root = team_project(tmp_path, "clicks_project", ["clicks"])
    below = root / "clicks_project" / "defs" / "clicks"
    project = find_project(below)
    assert (project.root, project.root_module, project.defs_module, project.definitions_module) == (
        root,
        "clicks_project",
        "clicks_project.defs",
        "clicks_project.definitions",
    )
    assert not project.is_package


def test_outside_any_project_the_package_is_read(tmp_path):
    assert find_project(tmp_path) == package_project()
    assert find_project(tmp_path).is_package


def test_a_team_project_holds_its_components_and_none_of_the_demo(tmp_path):
    root = team_project(tmp_path, "views_project", ["views_a", "views_b"])
    specs = project_specs(find_project(root))
    assert sorted(specs.streams) == ["views_a", "views_b"] and specs.datasets == {}
    assert specs.streams["views_a"]._source_path == root / "views_project" / "defs" / "views_a" / "defs.yaml"

    package = project_specs(package_project())
    assert {"playback", "impressions"} <= set(package.streams) and not {"views_a", "views_b"} & set(
        package.streams
    )
    assert {"views_per_title", "attributed_plays"} <= set(package.datasets)


def test_a_stream_declared_twice_names_the_file(tmp_path):
    root = team_project(tmp_path, "twice_project", ["first", "second"])
    path = root / "twice_project" / "defs" / "second" / "defs.yaml"
    component = yaml.safe_load(path.read_text())
    component["attributes"]["name"] = "first"
    path.write_text(yaml.safe_dump(component, sort_keys=False))
    with pytest.raises(SpecError, match=r"defs\.yaml: field 'name': stream 'first' is declared twice"):
        project_specs(find_project(root))


def test_a_refused_component_names_the_file_the_field_and_its_line(tmp_path):
    from backfill_platform_tests.support.projects import defs_folder, load_project, write_project

    project = write_project(tmp_path, [mutated(name="clicks", allowed_lateness="banana", stray=1)])
    path = defs_folder(project.root) / "clicks" / "defs.yaml"
    with pytest.raises(SpecError) as error:
        load_project(project)
    assert str(error.value).startswith(f"{path}: field 'allowed_lateness': ")
    assert "'banana' is not a duration such as '15m', '8h' or '1d12h' (line 3)" in str(error.value)
    assert "field 'stray': Extra inputs are not permitted (line " in str(error.value)
