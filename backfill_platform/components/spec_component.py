"""What the Stream and Dataset components share: their attributes are a spec, validated by its model."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Generic, Self, TypeVar

from dagster import Component, ComponentLoadContext
from pydantic import BaseModel

from backfill_platform.specs.common import SpecModel
from backfill_platform.specs.spec_set import raise_problems, record_source
from backfill_platform.specs.yaml_guard import check_component_file

SpecT = TypeVar("SpecT", bound=SpecModel)
# A component instance's file in its folder of the defs folder.
COMPONENT_FILE = "defs.yaml"


class SpecComponent(Component, Generic[SpecT]):
    spec_model: ClassVar[type[SpecModel]]

    def __init__(self, spec: SpecT, path: Path | None = None) -> None:
        self.spec = spec
        self.path = path

    @classmethod
    def get_model_cls(cls) -> type[BaseModel]:
        # `dg check defs` validates `attributes` against the spec model (file and line in errors).
        return cls.spec_model

    @classmethod
    def load(cls, attributes: BaseModel | None, context: ComponentLoadContext) -> Self:
        path = context.path / COMPONENT_FILE
        check_component_file(path)
        spec = cls.spec_model.model_validate(attributes)
        record_source(spec, path)  # errors name the file; transforms resolve beside it
        raise_problems(path, cls.problems_at_load(spec))
        return cls(spec=spec, path=path)

    @classmethod
    def problems_at_load(cls, spec: SpecT) -> list:
        """Reference problems decidable from this spec alone (see `specs/references.py`)."""
        return []
