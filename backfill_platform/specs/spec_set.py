"""A project's streams and datasets (`SpecSet`) and how a problem found in them is reported.

The set is filled from a project's component tree (`components/registry.py`); every refusal is one
`SpecError` naming the spec's file and each field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from backfill_platform.specs.isolation import isolation_problems
from backfill_platform.specs.references import Problem
from backfill_platform.specs.stream import StreamSpec
from backfill_platform.specs.upcasts import UPCAST_STEPS
from backfill_platform.specs.yaml_guard import SpecError


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


def check_isolation(streams: dict[str, StreamSpec]) -> None:
    """No stream's replay target is another's live topic or stream (`specs/isolation.py`): one SpecError
    naming the file of the first stream that lists one."""
    for spec in streams.values():
        problems = [Problem(field, reason) for field, reason in isolation_problems(spec, streams)]
        raise_problems(getattr(spec, "_source_path", None), problems)
