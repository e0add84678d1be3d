"""Which streams and datasets exist: those of the project's component tree, whatever the entrance.

A project is a dg project (`pyproject.toml` or `dg.toml` with `[tool.dg]`): the one holding the
working directory, as `dg` finds it, or else this package's own (the demo's). Its specs are its
`Stream` and `Dataset` component instances, found and validated by Dagster's component loader, the one
that builds the code location, after the same YAML bounds (`specs/yaml_guard.check_folder`). The CLI
reads them here, and the code location's jobs receive them as the `specs` resource
(`components/lakehouse.py`), so a team's project needs no variable for either.

This package's own project also serves the spec folders of `BACKFILL_PLATFORM_SPECS`, as its code
location does (its Lakehouse builds their assets): flat spec files beside the demo, for tests and tools. A team's project does not:
its defs folder is its registry.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path

from dagster.components.core.component_tree import ComponentTree, ComponentTreeException
from dagster_shared.utils.config import discover_config_file, load_toml_as_dict
from pydantic import ValidationError

import backfill_platform
from backfill_platform.components.dataset import Dataset
from backfill_platform.components.stream import Stream
from backfill_platform.specs.loader import (
    SpecError,
    SpecSet,
    check_isolation,
    field_path,
    load_specs,
    raise_problems,
    spec_dirs,
)
from backfill_platform.specs.references import dataset_problems
from backfill_platform.specs.yaml_guard import check_folder

PACKAGE_ROOT_MODULE = "backfill_platform"


@dataclass(frozen=True)
class Project:
    """A dg project: its folder, its defs module and the module of its code location."""

    root: Path
    root_module: str
    defs_module: str
    definitions_module: str

    @property
    def is_package(self) -> bool:
        """This package's own project (the demo), which also serves BACKFILL_PLATFORM_SPECS."""
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


def project_of(tree: ComponentTree) -> Project:
    """The project of a component tree, as its code location loaded it (this package's by its defs
    module, wherever it is installed)."""
    package = package_project()
    return package if tree.defs_module_name == package.defs_module else find_project(tree.project_root)


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


def folder_specs(project: Project, components: SpecSet) -> SpecSet:
    """The specs of the BACKFILL_PLATFORM_SPECS folders: this package's project only (a team's project
    reads its defs folder alone). A dataset there may read one of the project's component streams."""
    folders = spec_dirs()[1:] if project.is_package else []
    return load_specs(folders, known_streams=components.streams) if folders else SpecSet()


def combined(components: SpecSet, folders: SpecSet) -> SpecSet:
    """Every spec of the project: its components and its folders' specs, each name once. The components'
    datasets are checked against their streams here, as their build_defs does."""
    specs = SpecSet(streams=dict(components.streams), datasets=dict(components.datasets))
    for spec in [*folders.streams.values(), *folders.datasets.values()]:
        specs.add(spec, spec._source_path)
    for dataset in components.datasets.values():
        raise_problems(dataset._source_path, dataset_problems(dataset, specs.streams))
    check_isolation(specs.streams)
    return specs


def project_specs(project: Project | None = None) -> SpecSet:
    """Every stream and dataset of the project (default: the working directory's), validated."""
    project = project or find_project()
    importable(project)
    defs_module = importlib.import_module(project.defs_module)
    check_folder(Path(defs_module.__file__).parent)
    tree = ComponentTree.from_module(defs_module=defs_module, project_root=project.root)
    try:
        components = tree_specs(tree)
    except ComponentTreeException as error:
        # Dagster's message draws the tree and names no field: the spec's own refusal says what is wrong.
        raise spec_error_of(error) or error from None
    return combined(components, folder_specs(project, components))


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
