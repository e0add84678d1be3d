"""Which streams and datasets exist: those of the project's component tree, whatever the entrance.

A project is a dg project (`pyproject.toml` or `dg.toml` with `[tool.dg]`): the one holding the
working directory, as `dg` finds it, or else this package's own (the demo's). Its specs are its
`Stream` and `Dataset` component instances, found and validated by Dagster's component loader, the one
that builds the code location, after the same YAML bounds (`specs/yaml_guard.check_folder`). The CLI
reads them here, and the code location's jobs receive them as the `specs` resource
(`components/lakehouse.py`), so a team's project needs no variable for either.

The defs folder is the only registry: the demo, the benchmark and the tests load a project's
definitions as its code location does (`project_definitions`). The variable of the former flat route,
BACKFILL_PLATFORM_SPECS, is refused wherever specs are read (`refuse_flat_route`), so a spec folder it
names is never silently ignored.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from dagster import Definitions
from dagster.components import load_defs
from dagster.components.core.component_tree import ComponentTree, ComponentTreeException
from dagster_shared.utils.config import discover_config_file, load_toml_as_dict
from pydantic import ValidationError

import backfill_platform
from backfill_platform.components.dataset import Dataset
from backfill_platform.components.spec_component import COMPONENT_FILE
from backfill_platform.components.stream import Stream
from backfill_platform.settings import SPECS_ENV
from backfill_platform.specs.references import dataset_problems
from backfill_platform.specs.spec_set import SpecSet, check_isolation, field_path, raise_problems
from backfill_platform.specs.yaml_guard import SpecError, check_folder, load_yaml

PACKAGE_ROOT_MODULE = "backfill_platform"
# The component types whose attributes are a spec, and the spec's kind (`demo_spec_data`).
DEMO_KINDS = {
    "backfill_platform.components.Stream": "stream",
    "backfill_platform.components.Dataset": "dataset",
}


@dataclass(frozen=True)
class Project:
    """A dg project: its folder, its defs module and the module of its code location."""

    root: Path
    root_module: str
    defs_module: str
    definitions_module: str

    @property
    def is_package(self) -> bool:
        """This package's own project (the demo)."""
        return self.root_module == PACKAGE_ROOT_MODULE


def package_project() -> Project:
    """This package's own project, from a checkout or site-packages alike."""
    return Project(
        root=Path(backfill_platform.__file__).parents[1],
        root_module=PACKAGE_ROOT_MODULE,
        defs_module=f"{PACKAGE_ROOT_MODULE}.defs",
        definitions_module=f"{PACKAGE_ROOT_MODULE}.definitions",
    )


def find_project(start: Path | None = None) -> Project:
    """The dg project holding `start` (default: the working directory), else this package's own."""
    config = discover_config_file((start or Path.cwd()).resolve())
    if config is None:
        return package_project()
    toml = load_toml_as_dict(config)
    dg = toml if config.name == "dg.toml" else toml.get("tool", {}).get("dg", {})
    if dg.get("directory_type", "project") != "project":
        return package_project()  # a dg workspace, not a project: nothing to read specs from
    settings = dg.get("project", {})
    root_module = settings.get("root_module")
    if not root_module:
        raise SpecError(f"{config}: [tool.dg.project] names no root_module")
    module_name = toml.get("tool", {}).get("dagster", {}).get("module_name")
    return Project(
        root=config.parent,
        root_module=root_module,
        defs_module=settings.get("defs_module") or f"{root_module}.defs",
        definitions_module=settings.get("code_location_target_module")
        or module_name
        or f"{root_module}.definitions",
    )


def importable(project: Project) -> None:
    """Make the project's modules importable as `dg` and `dagster dev` do: from its folder."""
    if importlib.util.find_spec(project.root_module) is None:
        sys.path.insert(0, str(project.root))
        importlib.invalidate_caches()


def tree_specs(tree: ComponentTree) -> SpecSet:
    """The specs of a component tree's Stream and Dataset instances (each validated as it loads)."""
    specs = SpecSet()
    for component in tree.get_all_components(of_type=Stream) + tree.get_all_components(of_type=Dataset):
        specs.add(component.spec, component.path)
    return specs


def checked(components: SpecSet) -> SpecSet:
    """The project's specs once every stream is known: each dataset against its streams (as its
    build_defs checks it) and no stream's replay target another's live one."""
    for dataset in components.datasets.values():
        raise_problems(dataset._source_path, dataset_problems(dataset, components.streams))
    check_isolation(components.streams)
    return components


def refuse_flat_route() -> None:
    """Refuse BACKFILL_PLATFORM_SPECS, the variable of the former flat spec folders: set, it would
    otherwise be silently ignored."""
    if os.environ.get(SPECS_ENV, "").strip():
        raise SpecError(
            f"{SPECS_ENV} is set, but spec folders are no longer read: streams and datasets are the Stream "
            f"and Dataset component instances of a project's defs folder. Unset {SPECS_ENV}; then create "
            "a project with `backfill-platform init PATH` and add each spec from its folder with "
            "`dg scaffold defs backfill_platform.components.Stream <name>` (or `...Dataset <name>`)."
        )


def defs_module_of(project: Project) -> ModuleType:
    """The project's defs module, imported as `dg` does, after the platform's YAML bounds on its folder
    (a bomb or a FIFO named defs.yaml is refused with its file and line, not expanded or waited on)."""
    refuse_flat_route()
    importable(project)
    defs_module = importlib.import_module(project.defs_module)
    check_folder(Path(defs_module.__file__).parent)
    return defs_module


def project_definitions(project: Project) -> Definitions:
    """The project's definitions as its code location builds them: every component instance of its defs
    folder, through Dagster's component loader (the demo, the benchmark and tests load theirs here)."""
    return load_defs(defs_module_of(project), project_root=project.root)


def project_specs(project: Project | None = None) -> SpecSet:
    """Every stream and dataset of the project (default: the working directory's), validated."""
    project = project or find_project()
    tree = ComponentTree.from_module(defs_module=defs_module_of(project), project_root=project.root)
    try:
        components = tree_specs(tree)
    except ComponentTreeException as error:
        # Dagster's message draws the tree and names no field: the spec's own refusal says what is wrong.
        raise spec_error_of(error) or error from None
    return checked(components)


def spec_error_of(error: ComponentTreeException) -> SpecError | None:
    """The refusal behind a component that did not load: the spec's own (`SpecError`), or its attributes'
    validation errors as one `SpecError` naming the file, each field and its line; None for anything else
    (a bug, raised as Dagster reports it)."""
    cause = error.__cause__
    if isinstance(cause, SpecError):
        return cause
    if not isinstance(cause, ValidationError):
        return None
    # Dagster re-raises the model's errors with each location rewritten as "attributes.x at FILE:LINE";
    # the model's own errors (the context, in the same order) keep the field's path.
    located, own = cause.errors(), getattr(cause.__context__, "errors", lambda: [])()
    if len(own) != len(located):
        return None
    problems, path = [], None
    for outer, inner in zip(located, own, strict=True):
        position = (outer.get("ctx") or {}).get("source_position")
        path = path or (position.filename if position else None)
        line = f" (line {position.start.line})" if position else ""
        problems.append(f"field '{field_path(inner['loc'])}': {inner['msg']}{line}")
    return SpecError(f"{path or '<component>'}: {'; '.join(problems)}")


def demo_spec_data(name: str) -> dict:
    """The spec of one of the demo's streams or datasets (a component instance of this package's
    project) as a `kind: stream|dataset` mapping of its attributes, for tools and tests that derive a
    spec from the demo's."""
    path = (
        Path(importlib.import_module(package_project().defs_module).__file__).parent / name / COMPONENT_FILE
    )
    component = load_yaml(path)
    kind = DEMO_KINDS.get(str(component.get("type"))) if isinstance(component, dict) else None
    if kind is None or not isinstance(component.get("attributes"), dict):
        raise SpecError(f"{path}: not a Stream or Dataset component with its spec in 'attributes'")
    return {"kind": kind, **component["attributes"]}
