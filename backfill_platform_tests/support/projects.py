"""Projects as a team writes them, for tests: `backfill-platform init`, then one Stream or Dataset component
instance per spec (`defs/<name>/defs.yaml`), loaded the way the code location and the CLI load theirs."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from pathlib import Path

import yaml
from dagster import Definitions

from backfill_platform.components.project import copy_demo_components, init_project
from backfill_platform.components.registry import Project, find_project, project_definitions, project_specs
from backfill_platform.specs.spec_set import SpecSet
from backfill_platform_tests.support.specs import write_component


def write_project(parent: Path, specs: Iterable[dict], name: str = "team", demo: bool = False) -> Project:
    """A new project under `parent` holding `specs` (each `kind: stream|dataset` and its fields) as
    component instances named after the spec, and the demo's streams and datasets beside them if `demo`.
    Its module name is unique in the process (`<name>_<hex>`): Python keeps every project it imported, so
    two tests never share one by name."""
    module = f"{name}_{uuid.uuid4().hex[:8]}"
    root = parent / module
    init_project(root)
    if demo:
        copy_demo_components(defs_folder(root))
    for spec in specs:
        write_component(defs_folder(root), spec["name"], spec)
    return find_project(root)


def defs_folder(root: Path) -> Path:
    """The defs folder of the project at `root` (as `init_project` lays it out)."""
    return root / root.name / "defs"


def load_project(project: Project) -> SpecSet:
    """Every spec of the project, validated by Dagster's component loader (a refusal is a `SpecError`
    naming the file, the field and its line)."""
    return project_specs(project)


def write_workspace(project: Project) -> Path:
    """A workspace that `dagster dev` serves the project from: its code location module, its folder as
    the working directory (as `dg dev` does)."""
    location = {
        "module_name": project.definitions_module,
        "working_directory": str(project.root),
        "location_name": project.root_module,
    }
    path = project.root / "workspace.yaml"
    path.write_text(yaml.safe_dump({"load_from": [{"python_module": location}]}, sort_keys=False))
    return path


def project_defs(parent: Path, specs: Iterable[dict], demo: bool = False) -> Definitions:
    """The definitions of a new project holding `specs` (and the demo's, if `demo`), as its code location
    loads them."""
    return project_definitions(write_project(parent, specs, demo=demo))
