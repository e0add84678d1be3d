"""Dataset specs: a derived table, its versions, and the rules that validate it against the events.

Each version names a transform (`module:function`, a PySpark function of the events of a window).
The reconciliation rules are sums over the events table that the per-bucket sums of the dataset's
aggregation columns must equal; sums are invariant under grouping, so these expectations come from
the events, independently of the transform being checked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from backfill_platform.specs.common import FieldType, Identifier, SpecModel
from backfill_platform.specs.transforms import TRANSFORM_PATTERN, load_transform


class VersionSpec(SpecModel):
    transform: str = Field(
        description=(
            "`module:function` taking the events DataFrame of a window: `module.py` (or a package) beside "
            "the spec file, `path/to/file.py:function` relative to it, or an importable module."
        )
    )
    description: str = Field(default="", description="What this version changes; shown in the UI.")

    @field_validator("transform")
    @classmethod
    def _module_function(cls, value: str) -> str:
        if not TRANSFORM_PATTERN.match(value):
            raise ValueError(f"{value!r} is not 'package.module:function' or 'path/to/file.py:function'")
        return value

    def load_transform(self) -> Callable:
        """The transform function, resolved beside the spec file it was read from (`specs/transforms.py`);
        a clear error if the module or function does not exist."""
        return load_transform(self.transform, self._source_path)


class EventsAggregate(SpecModel):
    """An aggregate over the events of one bucket: `expression` over rows matching `filter`."""

    expression: str = Field(description="Spark SQL aggregate over the events of one bucket, e.g. `count(1)`.")
    filter: str = Field(default="true", description="Spark SQL condition on the events it aggregates.")


class ReconciliationRule(EventsAggregate):
    column: Identifier = Field(description="Dataset column whose per-bucket sum must equal the aggregate.")


class DatasetSpec(SpecModel):
    kind: Literal["dataset"] = "dataset"
    name: Identifier = Field(description="Dataset name: the asset keys and tables are named after it.")
    description: str = Field(default="", description="Shown in the Dagster UI.")
    owner: str = Field(default="team:data-platform", description="Dagster owner of its assets.")
    source_stream: Identifier = Field(description="The stream whose events it is computed from.")
    partition_column: Identifier = Field(description="DATE column holding the event-time day.")
    bucket: Literal["hour", "day"] = Field(
        "hour", description="The validation bucket: each hour of a day (with bucket_column) or the day."
    )
    bucket_column: Identifier | None = Field(
        None, validate_default=True, description="INT hour of the event time within the day (hour only)."
    )
    key_columns: list[Identifier] = Field(min_length=1, description="The grain: unique per row.")
    columns: dict[Identifier, FieldType] = Field(description="Output schema of every version.")
    versions: dict[Identifier, VersionSpec] = Field(
        min_length=1, description="Transform versions, each with its own shadow table."
    )
    active_version: Identifier = Field(description="The version whose validated shadow feeds production.")
    expected_rows: EventsAggregate = Field(description="Rows per bucket the events imply.")
    reconciliation: list[ReconciliationRule] = Field(
        default_factory=list, description="Per-bucket sums of dataset columns the events imply."
    )

    @field_validator("bucket_column")
    @classmethod
    def _bucket_column_follows_bucket(cls, value: str | None, info: ValidationInfo) -> str | None:
        """An hourly table names its hour column; a daily one has none (the day is the bucket), and a
        column given anyway would silently not be validated per hour, so it is refused."""
        bucket = info.data.get("bucket")
        if bucket == "day" and value is not None:
            raise ValueError(
                f"bucket_column {value!r} must be absent with bucket: day (the whole day is the bucket)"
            )
        if bucket == "hour" and value is None:
            raise ValueError("bucket_column is required with bucket: hour (the INT hour column)")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> DatasetSpec:
        if self.active_version not in self.versions:
            raise ValueError(f"active_version {self.active_version!r} is not one of {sorted(self.versions)}")
        named = [*self.bucket_columns, *self.key_columns]
        named += [rule.column for rule in self.reconciliation]
        missing = [name for name in named if name not in self.columns]
        if missing:
            raise ValueError(f"columns {missing} are used but not declared in 'columns'")
        if self.columns[self.partition_column] != "date":
            raise ValueError(f"partition_column {self.partition_column!r} must be of type date")
        if self.bucket_column and self.columns[self.bucket_column] not in ("int", "long"):
            raise ValueError(f"bucket_column {self.bucket_column!r} must be of type int")
        for column in self.bucket_columns:
            if column not in self.key_columns:
                raise ValueError(f"key_columns must include {column!r}")
        return self

    def shadow_table(self, version: str) -> str:
        return f"{self.name}__{version}"

    @property
    def bucket_columns(self) -> list[str]:
        """The columns naming a validation bucket: the day, then the hour for an hourly dataset.

        Every per-bucket figure (row counts, reconciliation sums, checksums, promotion verification)
        groups by these, so the declared `bucket` is decided here once.
        """
        return [self.partition_column, *([self.bucket_column] if self.bucket_column else [])]

    @property
    def value_columns(self) -> list[str]:
        return [c for c in self.columns if c not in self.key_columns]
