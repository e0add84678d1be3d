"""One YAML guard for every route a spec takes (specs/yaml_guard.py; issue 30): duplicate keys, alias
bombs, deep nesting, huge files, Python tags, bytes that are not UTF-8 and files that are not regular files
anywhere in a defs folder are refused with the file and the line, when a project's specs load and before
Dagster parses the folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from backfill_platform.specs.yaml_guard import MAX_SPEC_DEPTH, SpecError
from backfill_platform_tests.support.hostile import (  # noqa: F401 - nothing_outside is an autouse fixture
    nothing_outside,
    write_yaml,
)
from backfill_platform_tests.support.projects import defs_folder, load_project, write_project

BOMB = "\n".join(
    ['    a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    + [f"    a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
)
STREAM = "type: backfill_platform.components.Stream\nattributes:\n"


YAML_PROBES = {
    "duplicate key": (
        lambda d: write_yaml(d, "dup/defs.yaml", STREAM + "  name: a\n  name: b\n"),
        "line 4: key 'name' appears twice in one mapping (first on line 3)",
    ),
    "duplicate top-level key": (
        lambda d: write_yaml(d, "top/defs.yaml", STREAM + "type: x\n"),
        "line 3: key 'type' appears twice",
    ),
    "bomb in attributes": (
        lambda d: write_yaml(d, "b/defs.yaml", STREAM + BOMB + "\n"),
        "YAML nodes (aliases expanded)",
    ),
    "deep nesting in attributes": (
        lambda d: write_yaml(
            d, "n/defs.yaml", "type: x\nattributes:\n  a: " + "[" * 100_000 + "]" * 100_000 + "\n"
        ),
        f"line 3: YAML nested deeper than {MAX_SPEC_DEPTH} levels",
    ),
    "10 MB component": (
        lambda d: write_yaml(
            d, "h/defs.yaml", "type: x\nattributes:\n  description: " + "x" * (10 << 20) + "\n"
        ),
        "larger than a spec may be",
    ),
    "python tag": (
        lambda d: write_yaml(d, "p/defs.yaml", "type: !!python/object/apply:os.system ['true']\n"),
        "line 1: YAML tag",
    ),
    "not UTF-8": (
        lambda d: (
            write_yaml(d, "u/defs.yaml", STREAM)
            and (d / "u" / "defs.yaml").write_bytes(b"\xff\xfe")
            and d / "u" / "defs.yaml"
        ),
        "not UTF-8",
    ),
    "FIFO": (lambda d: os.mkfifo(d / "f.yaml") or d / "f.yaml", "not a regular file (a FIFO)"),
    "link to /dev/zero": (
        lambda d: (d / "z.yaml").symlink_to("/dev/zero") or d / "z.yaml",
        # Judged as a link out of its folder before it is opened.
        "a link leading out of the spec folder",
    ),
    "folder named .yaml": (
        lambda d: (d / "d.yaml").mkdir() or d / "d.yaml",
        "not a regular file (a directory)",
    ),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("probe", list(YAML_PROBES))
def test_hostile_yaml_is_refused_on_both_routes_with_file_and_line(tmp_path, probe):
    from backfill_platform.components.registry import project_definitions
    from backfill_platform.specs.yaml_guard import check_folder

    make, words = YAML_PROBES[probe]
    project = write_project(tmp_path, [])
    defs = defs_folder(project.root)
    path = make(defs)
    with pytest.raises(SpecError) as project_route:  # the CLI's and the jobs' specs
        load_project(project)
    with pytest.raises(SpecError) as components_route:  # what every init-made definitions.py runs first
        check_folder(defs)
    with pytest.raises(SpecError) as definitions_route:  # what the package's definitions.py loads through
        project_definitions(project)
    for error in (project_route, components_route, definitions_route):
        message = str(error.value)
        assert message.startswith(f"{path}: ") and words in message, message


def test_the_components_route_checks_before_dagster_parses():
    """Both code locations that load defs folders (the platform's and `init`'s) run the check first."""
    import backfill_platform.definitions as definitions
    from backfill_platform.components.project import DEFINITIONS

    # The package's through the registry's one entrance (probed above as `definitions_route`).
    assert "project_definitions(package_project())" in Path(definitions.__file__).read_text()
    assert 'check_folder(Path(__file__).parent / "defs")' in DEFINITIONS


def test_a_component_checks_its_own_yaml_whatever_loaded_it(tmp_path):
    """A route that never runs the project's definitions.py (`dg list component-tree`; a project that
    `create-dagster` wrote) still refuses a component whose defs.yaml holds a key twice, naming the
    line; the same component without it loads."""
    from types import SimpleNamespace

    from backfill_platform.components.registry import demo_spec_data
    from backfill_platform.components.stream import Stream
    from backfill_platform.specs.stream import StreamSpec

    component = tmp_path / "defs" / "plays"
    component.mkdir(parents=True)
    raw = {k: v for k, v in demo_spec_data("playback").items() if k != "kind"}
    attributes = StreamSpec.model_validate(raw)  # what Dagster's parse kept: the last of the two keys
    context = SimpleNamespace(path=component)
    defs_yaml = component / "defs.yaml"

    defs_yaml.write_text("type: backfill_platform.components.Stream\nattributes:\n  name: a\n  name: b\n")
    with pytest.raises(SpecError) as refused:
        Stream.load(attributes, context)
    assert (
        str(refused.value)
        == f"{defs_yaml}: line 4: key 'name' appears twice in one mapping (first on line 3); YAML would keep the last silently"
    )

    defs_yaml.write_text("type: backfill_platform.components.Stream\nattributes:\n  name: b\n")
    loaded = Stream.load(attributes, context)
    assert loaded.spec.name == raw["name"] and loaded.path == defs_yaml
