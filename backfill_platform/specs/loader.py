"""Find and load every spec: the package's own (the demo) and those in `BACKFILL_PLATFORM_SPECS`.

A spec that does not validate stops the load with the file, the field and the reason, so a broken spec
never yields a half-built code location.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from backfill_platform.settings import SPECS_ENV
from backfill_platform.specs.stream import StreamSpec
from backfill_platform.specs.upcasts import UPCAST_STEPS
from backfill_platform.specs.yaml_guard import (
    MAX_SPEC_BYTES,
    MAX_SPEC_DEPTH,
    MAX_SPEC_NODES,
    SpecError,
    check_inside,
    load_yaml,
)

# The built-in specs are the component instances of the package's defs folder (package data in
# pyproject.toml), located through importlib.resources so that an installed wheel finds them as a
# checkout does. The package runs from a folder, never a zip (Spark and Dagster need real files).
BUILTIN_SPECS_DIR = Path(str(resources.files("backfill_platform") / "defs"))
# A spec is either a flat YAML file with `kind: stream|dataset`, or a component instance (`defs.yaml`)
# of one of these types, whose `attributes` are the spec.
COMPONENT_KINDS = {
    "backfill_platform.components.Stream": "stream",
    "backfill_platform.components.Dataset": "dataset",
}
COMPONENT_FILE = "defs.yaml"
# One reader for the YAML of both routes (this loader and the Components', see `definitions.py`): regular
# files only, size, depth, alias-expansion and duplicate-key bounds, file and line in each refusal.
__all__ = [
    "MAX_SPEC_BYTES",
    "MAX_SPEC_DEPTH",
    "MAX_SPEC_NODES",
    "SpecError",
    "SpecSet",
    "check_isolation",
    "load_spec_file",
    "load_specs",
]


@dataclass(frozen=True)
class SpecSet:
    """All streams and datasets the platform knows about, keyed by name."""

    streams: dict[str, StreamSpec] = field(default_factory=dict)
    datasets: dict[str, Any] = field(default_factory=dict)

    def add(self, spec: Any, path: Path | None) -> None:
        """Register a stream or dataset; a name already taken is refused, naming the file."""
        registry = self.streams if spec.kind == "stream" else self.datasets
        if spec.name in registry:
            raise SpecError(f"{path}: field 'name': {spec.kind} {spec.name!r} is declared twice")
        registry[spec.name] = spec


def spec_dirs() -> list[Path]:
    dirs = [BUILTIN_SPECS_DIR]
    for entry in os.environ.get(SPECS_ENV, "").split(os.pathsep):
        if entry.strip():
            dirs.append(Path(entry.strip()))
    return dirs


def load_spec_file(path: Path) -> Any:
    """Parse and validate one YAML spec file (a stream or a dataset)."""
    from backfill_platform.specs.dataset import DatasetSpec

    raw = load_yaml(path)
    if not isinstance(raw, dict):
        raise SpecError(f"{path}: a spec is a mapping with 'kind: stream' or 'kind: dataset'")
    if "type" in raw:
        raw = _component_spec(path, raw)
        if raw is None:
            return None
    kinds = {"stream": StreamSpec, "dataset": DatasetSpec}
    model = kinds.get(raw.get("kind", ""))
    if model is None:
        raise SpecError(f"{path}: field 'kind': must be one of {sorted(kinds)}, got {raw.get('kind')!r}")
    try:
        spec = model.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"field '{field_path(err['loc'])}': {err['msg']}" for err in exc.errors())
        raise SpecError(f"{path}: {problems}") from None
    record_source(spec, path)
    if isinstance(spec, StreamSpec):
        from backfill_platform.specs.references import stream_problems

        raise_problems(path, stream_problems(spec))
    return spec


def record_source(spec: Any, path: Path) -> None:
    """Remember the file a spec came from: errors found later name it, and a version's transform
    resolves beside it (`specs/transforms.py`)."""
    spec._source_path = path
    for version in getattr(spec, "versions", {}).values():
        version._source_path = path


def raise_problems(path: Path | None, problems: list) -> None:
    """One SpecError naming the file and every problem found in it (see `specs/references.py`)."""
    if problems:
        raise SpecError(f"{path or '<spec built in code>'}: {'; '.join(map(str, problems))}")


def _component_spec(path: Path, raw: dict) -> dict | None:
    """The spec of a Stream or Dataset component instance; None for a component of another type."""
    kind = COMPONENT_KINDS.get(str(raw["type"]))
    if kind is None:
        return None
    attributes = raw.get("attributes")
    if not isinstance(attributes, dict):
        raise SpecError(f"{path}: field 'attributes': a {raw['type']} component declares its spec here")
    return {"kind": kind, **attributes}


def builtin_spec_data(name: str) -> dict:
    """The raw spec (as a flat `kind: ...` mapping) of a built-in stream or dataset, for tools and tests
    that derive a spec from the demo's."""
    path = BUILTIN_SPECS_DIR / name / COMPONENT_FILE
    spec = _component_spec(path, load_yaml(path))
    if spec is None:
        raise SpecError(f"{path}: not a Stream or Dataset component")
    return spec


def spec_files(folder: Path) -> list[Path]:
    """Flat spec files at the top of a folder, and component instances anywhere below it."""
    return sorted({*folder.glob("*.yaml"), *folder.rglob(COMPONENT_FILE)})


def field_path(loc: tuple) -> str:
    """A pydantic error's location as the spec's dotted field (`archive.location`, `upcast.0.rename.to`)."""
    # pydantic marks "the key of a mapping was invalid" with a trailing '[key]' part; the path says enough.
    parts = [part for part in loc if part != "[key]"]
    # It also names the tag of a discriminated union: an upcast step's kind, after the step's index and
    # before the step's own key (`upcast.0.rename.rename.to`). The path names the step's key once.
    tags = [
        i
        for i in range(2, len(parts))
        if parts[i - 2] == "upcast" and isinstance(parts[i - 1], int) and parts[i] in UPCAST_STEPS
    ]
    return ".".join(str(part) for i, part in enumerate(parts) if i not in tags) or "<root>"


def load_specs(dirs: list[Path] | None = None, known_streams: dict[str, StreamSpec] | None = None) -> SpecSet:
    """Load every spec of the given folders (default: built-in + BACKFILL_PLATFORM_SPECS): flat `*.yaml`
    files and Stream/Dataset component instances (`defs.yaml`). A dataset may read a stream of these
    folders or one of `known_streams` (a project's components, `components/registry.py`)."""
    specs = SpecSet()
    for folder in dirs if dirs is not None else spec_dirs():
        if folder == BUILTIN_SPECS_DIR and not any(folder.rglob(COMPONENT_FILE)):
            raise SpecError(f"{folder}: the built-in specs are missing (package data not installed?)")
        if not folder.is_dir():
            raise SpecError(f"{folder}: spec folder does not exist (named in {SPECS_ENV}?)")
        for path in spec_files(folder):
            check_inside(path, folder)  # a link out of the folder is refused unread
            spec = load_spec_file(path)
            if spec is None:
                continue
            specs.add(spec, path)
    # Cross-spec references once every spec is known: the source stream, SQL rules against its events
    # table, and each version's transform.
    from backfill_platform.specs.references import dataset_problems

    streams = {**(known_streams or {}), **specs.streams}
    for dataset in specs.datasets.values():
        raise_problems(dataset._source_path, dataset_problems(dataset, streams))
    check_isolation(streams)
    return specs


def check_isolation(streams: dict[str, StreamSpec]) -> None:
    """No stream's replay target is another's live topic or stream (`specs/isolation.py`): one SpecError
    naming the file of the first stream that lists one."""
    from backfill_platform.specs.isolation import isolation_problems
    from backfill_platform.specs.references import Problem

    for spec in streams.values():
        problems = [Problem(field, reason) for field, reason in isolation_problems(spec, streams)]
        raise_problems(getattr(spec, "_source_path", None), problems)
