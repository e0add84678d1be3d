"""Find and load every spec: the package's own (the demo) and those in `BACKFILL_PLATFORM_SPECS`.

A spec that does not validate stops the load with the file, the field and the reason, so a broken spec
never yields a half-built code location.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from backfill_platform.settings import SPECS_ENV
from backfill_platform.specs.stream import StreamSpec

BUILTIN_SPECS_DIR = Path(__file__).parent / "builtin"


class SpecError(ValueError):
    """A spec file that cannot be used; the message names the file, the field and the reason."""


@dataclass(frozen=True)
class SpecSet:
    """All streams and datasets the platform knows about, keyed by name."""

    streams: dict[str, StreamSpec] = field(default_factory=dict)
    datasets: dict[str, Any] = field(default_factory=dict)


def spec_dirs() -> list[Path]:
    dirs = [BUILTIN_SPECS_DIR]
    for entry in os.environ.get(SPECS_ENV, "").split(os.pathsep):
        if entry.strip():
            dirs.append(Path(entry.strip()))
    return dirs


def load_spec_file(path: Path) -> Any:
    """Parse and validate one YAML spec file (a stream or a dataset)."""
    from backfill_platform.specs.dataset import DatasetSpec

    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise SpecError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise SpecError(f"{path}: a spec is a mapping with 'kind: stream' or 'kind: dataset'")
    kinds = {"stream": StreamSpec, "dataset": DatasetSpec}
    model = kinds.get(raw.get("kind", ""))
    if model is None:
        raise SpecError(f"{path}: field 'kind': must be one of {sorted(kinds)}, got {raw.get('kind')!r}")
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"field '{_field_path(err['loc'])}': {err['msg']}" for err in exc.errors())
        raise SpecError(f"{path}: {problems}") from None


def _field_path(loc: tuple) -> str:
    # pydantic marks "the key of a mapping was invalid" with a trailing '[key]' part; the path says enough.
    return ".".join(str(part) for part in loc if part != "[key]") or "<root>"


def load_specs(dirs: list[Path] | None = None) -> SpecSet:
    """Load every `*.yaml` spec of the given folders (default: built-in + BACKFILL_PLATFORM_SPECS)."""
    specs = SpecSet()
    for folder in dirs if dirs is not None else spec_dirs():
        if not folder.is_dir():
            raise SpecError(f"{folder}: spec folder does not exist (named in {SPECS_ENV}?)")
        for path in sorted(folder.glob("*.yaml")):
            spec = load_spec_file(path)
            registry = specs.streams if spec.kind == "stream" else specs.datasets
            if spec.name in registry:
                raise SpecError(f"{path}: field 'name': {spec.kind} {spec.name!r} is declared twice")
            registry[spec.name] = spec
    for dataset in specs.datasets.values():
        if dataset.source_stream not in specs.streams:
            raise SpecError(
                f"dataset {dataset.name!r}: field 'source_stream': unknown stream {dataset.source_stream!r}"
            )
    return specs
