"""Dataset specs: a derived table, its versions, and the rules that validate it against the events.

Each version names a transform (`module:function`, a PySpark function of the events of a window).
The reconciliation rules are sums over the events table that the per-bucket sums of the dataset's
aggregation columns must equal; sums are invariant under grouping, so these expectations come from
the events, independently of the transform being checked.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from typing import Literal

from pydantic import Field, field_validator, model_validator

from backfill_platform.specs.common import FieldType, Identifier, SpecModel

_TRANSFORM = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


class VersionSpec(SpecModel):
    transform: str = Field(description="`package.module:function` taking the events DataFrame of a window.")
    description: str = ""

    @field_validator("transform")
    @classmethod
    def _module_function(cls, value: str) -> str:
        if not _TRANSFORM.match(value):
            raise ValueError(f"{value!r} is not 'package.module:function'")
        return value

    def load_transform(self) -> Callable:
        """The transform function; a clear error if the module or function does not exist."""
        module_name, function_name = self.transform.split(":")
        try:
            function = getattr(importlib.import_module(module_name), function_name)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"transform {self.transform!r} cannot be loaded: {exc}") from exc
        if not callable(function):
            raise ValueError(f"transform {self.transform!r} is not a function")
        return function


class EventsAggregate(SpecModel):
    """An aggregate over the events of one bucket: `expression` over rows matching `filter`."""

    expression: str
    filter: str = "true"


class ReconciliationRule(EventsAggregate):
    column: Identifier


class DatasetSpec(SpecModel):
    kind: Literal["dataset"] = "dataset"
    name: Identifier
    description: str = ""
    owner: str = "team:data-platform"
    source_stream: Identifier
    partition_column: Identifier = Field(description="DATE column holding the event-time day.")
    bucket_column: Identifier = Field(description="INT hour of the event time within the day.")
    key_columns: list[Identifier] = Field(min_length=1, description="The grain: unique per row.")
    columns: dict[Identifier, FieldType] = Field(description="Output schema of every version.")
    versions: dict[Identifier, VersionSpec] = Field(min_length=1)
    active_version: Identifier
    expected_rows: EventsAggregate = Field(description="Rows per bucket the events imply.")
    reconciliation: list[ReconciliationRule] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self) -> DatasetSpec:
        if self.active_version not in self.versions:
            raise ValueError(f"active_version {self.active_version!r} is not one of {sorted(self.versions)}")
        named = [self.partition_column, self.bucket_column, *self.key_columns]
        named += [rule.column for rule in self.reconciliation]
        missing = [name for name in named if name not in self.columns]
        if missing:
            raise ValueError(f"columns {missing} are used but not declared in 'columns'")
        if self.columns[self.partition_column] != "date":
            raise ValueError(f"partition_column {self.partition_column!r} must be of type date")
        if self.columns[self.bucket_column] not in ("int", "long"):
            raise ValueError(f"bucket_column {self.bucket_column!r} must be of type int")
        for column in (self.partition_column, self.bucket_column):
            if column not in self.key_columns:
                raise ValueError(f"key_columns must include {column!r}")
        return self

    def shadow_table(self, version: str) -> str:
        return f"{self.name}__{version}"

    @property
    def value_columns(self) -> list[str]:
        return [c for c in self.columns if c not in self.key_columns]
