"""Projects as a team writes them, for tests: `backfill-platform init`, then one Stream or Dataset component
instance per spec (`defs/<name>/defs.yaml`), loaded the way the code location and the CLI load theirs."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from pathlib import Path

from backfill_platform.components.project import init_project
from backfill_platform.components.registry import Project, find_project, project_specs
from backfill_platform.specs.loader import SpecSet
from backfill_platform_tests.support.specs import write_component


def write_project(parent: Path, specs: Iterable[dict], name: str = "team") -> Project:
    """A new project under `parent` holding `specs` (each `kind: stream|dataset` and its fields) as
    component instances named after the spec. Its module name is unique in the process (`<name>_<hex>`):
    Python keeps every project it imported, so two tests never share one by name."""
    module = f"{name}_{uuid.uuid4().hex[:8]}"
    root = parent / module
    init_project(root)
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
