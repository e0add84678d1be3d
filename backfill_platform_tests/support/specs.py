"""Spec dicts changed field by field from the demo stream's, written as spec files."""

from __future__ import annotations

from pathlib import Path

import yaml

from backfill_platform.components.registry import demo_spec_data

VALID = demo_spec_data("playback")


def write_component(defs: Path, name: str, spec: dict) -> Path:
    """A spec (`kind: stream|dataset` and its fields) as the Stream or Dataset component instance
    `defs/<name>/defs.yaml` of a project's defs folder."""
    attributes = {key: value for key, value in spec.items() if key != "kind"}
    component_type = {"stream": "Stream", "dataset": "Dataset"}[spec["kind"]]
    component = {"type": f"backfill_platform.components.{component_type}", "attributes": attributes}
    path = defs / name / "defs.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(component, sort_keys=False))
    return path


def mutated(**changes) -> dict:
    """The demo stream's spec with `changes`: `a__b__0__c=value` sets a nested field (`KeyError` deletes it)."""
    spec = yaml.safe_load(yaml.safe_dump(VALID))
    for dotted, value in changes.items():
        target = spec
        *parents, leaf = dotted.split("__")
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        if value is KeyError:
            del target[leaf]
        else:
            target[leaf] = value
    return spec
