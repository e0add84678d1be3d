"""Dataset specs: a derived table, its versions, and the rules that validate it against the events.

Each version names a transform (`module:function`, a PySpark function of the events of a window).
A dataset reads one stream (`source_stream`) or several (`sources`: a join, such as plays attributed
to the impressions that led to them); each source may be read with a `lookback` before the day, so a
day's rows can depend on the tail of the day before. The reconciliation rules are sums over one
source's events that the per-bucket sums of the dataset's aggregation columns must equal; sums are
invariant under grouping, so these expectations come from the events, independently of the transform
being checked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, ValidationInfo, field_validator, model_validator

from backfill_platform.specs.common import FieldType, Identifier, SpecModel, check_name
from backfill_platform.specs.durations import DAY, parse_duration
from backfill_platform.specs.grain import Grain
from backfill_platform.specs.jvm_zones import JVM_TIME_ZONES
from backfill_platform.specs.transforms import TRANSFORM_PATTERN, load_transform

# A lookback reaches at most this far before a day: a week of a source's events per day read.
MAX_LOOKBACK = 7 * DAY


def _lookback(value: Any) -> timedelta | None:
    if value is None:
        return None
    duration = parse_duration(value)
    if not timedelta(0) <= duration <= MAX_LOOKBACK:
        raise ValueError(f"lookback {value!r} must be between 0s and {MAX_LOOKBACK.days}d")
    return duration


class VersionSpec(SpecModel):
    transform: str = Field(
        description=(
            "`module:function` taking the events DataFrame of a window: `module.py` (or a package) beside "
            "the spec file, `path/to/file.py:function` inside its folder, or a module of the project's "
            "packages (`BACKFILL_PLATFORM_TRANSFORM_PACKAGES`)."
        )
    )
    description: str = Field(default="", description="What this version changes; shown in the UI.")

    @field_validator("transform")
    @classmethod
    def _module_function(cls, value: str) -> str:
        return check_name(value, TRANSFORM_PATTERN, "'package.module:function' or 'path/to/file.py:function'")

    def load_transform(self) -> Callable:
        """The transform function, resolved beside the spec file it was read from (`specs/transforms.py`);
        a clear error if the module or function does not exist."""
        return load_transform(self.transform, self._source_path)


class EventsAggregate(SpecModel):
    """An aggregate over the events of one bucket: `expression` over rows matching `filter`."""

    expression: str = Field(
        description=(
            "Spark SQL aggregate over the events of one bucket, e.g. `count(1)`: the source's columns, "
            'literals, operators and allow-listed functions only (see "The boundary").'
        )
    )
    filter: str = Field(
        default="true",
        description="Spark SQL condition on the events it aggregates (the same allow-list, no aggregate).",
    )
    source: Identifier | None = Field(
        default=None,
        description="The source stream whose events it aggregates (required when the dataset has several).",
    )


class ReconciliationRule(EventsAggregate):
    column: Identifier = Field(description="Dataset column whose per-bucket sum must equal the aggregate.")


class SourceSpec(SpecModel):
    """One stream a dataset reads, and how far before each day it reads it."""

    stream: Identifier = Field(description="The stream's name.")
    lookback: timedelta | None = Field(
        default=None,
        description="Read this stream's events from `day start - lookback` (default: the dataset's lookback).",
    )

    @field_validator("lookback", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> timedelta | None:
        return _lookback(value)


@dataclass(frozen=True)
class SourceInput:
    """A source as the pipeline reads it: the stream and its effective lookback."""

    stream: str
    lookback: timedelta

    @property
    def days_back(self) -> int:
        """How many whole days before a day its lookback reaches into (0: the day alone)."""
        return -(-self.lookback // DAY)  # ceiling

    def partitions_back(self, grain: Grain) -> int:
        """How many partitions (days, or hours) before a partition its lookback reaches into."""
        return grain.partitions_in(self.lookback)


class DatasetSpec(SpecModel):
    kind: Literal["dataset"] = "dataset"
    name: Identifier = Field(description="Dataset name: the asset keys and tables are named after it.")
    description: str = Field(default="", description="Shown in the Dagster UI.")
    owner: str = Field(default="team:data-platform", description="Dagster owner of its assets.")
    source_stream: Identifier | None = Field(
        default=None,
        description="The stream whose events it is computed from (one source; the transform takes one DataFrame).",
    )
    sources: list[Identifier | SourceSpec] | None = Field(
        default=None,
        description=(
            "Several streams (names, or `{stream, lookback}`) instead of `source_stream`; the transform takes "
            "one DataFrame per source, as keyword arguments named after the streams."
        ),
    )
    lookback: timedelta = Field(
        default=timedelta(0),
        description=(
            "Each source's events are read from `day start - lookback` to the day's end (a source may "
            "override it); the transform must still output rows of its own days only."
        ),
    )
    partition_timezone: str = Field(
        default="UTC",
        description=(
            "The time zone of a daily dataset's days (an IANA name, e.g. `America/New_York`): day "
            "`2026-11-01` runs from local midnight to local midnight (25 hours that day in New York), read "
            "from the UTC hours or days of its sources. An hourly dataset's hours are UTC."
        ),
    )
    partition_column: Identifier = Field(
        description=(
            "Column holding the event-time partition: a `date` (the day) over a daily stream, a `timestamp` "
            "(the start of the event's hour) over an hourly stream (`partition_grain: hour`)."
        )
    )
    bucket: Literal["hour", "day", "partition"] = Field(
        "hour",
        description=(
            "The validation bucket: each hour of a day (`hour`, with bucket_column), or the whole "
            "partition (`partition`; `day` says the same of a daily dataset). When absent it follows the "
            "grain: `partition` for an hourly dataset and for local days (the only bucket they have), "
            "`hour` for UTC days."
        ),
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

    @field_validator("lookback", mode="before")
    @classmethod
    def _lookback_duration(cls, value: Any) -> timedelta:
        return _lookback(value) or timedelta(0)

    @field_validator("partition_timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ValueError, ZoneInfoNotFoundError):
            raise ValueError(
                f"{value!r} is not a time zone name such as 'America/New_York' or 'UTC'"
            ) from None
        # Python and Spark (the JVM) must both know it: Python's database also has names the JVM refuses
        # (`localtime`, `Factory`, `EST`, a zone newer than the JVM's data), which fail the run in Spark.
        if value not in JVM_TIME_ZONES:
            raise ValueError(
                f"{value!r} is a time zone Python knows but Spark's JVM does not: give a zone both know, "
                "such as 'America/New_York' or 'UTC'"
            )
        return value

    @field_validator("bucket_column")
    @classmethod
    def _bucket_column_follows_bucket(cls, value: str | None, info: ValidationInfo) -> str | None:
        """An hourly table names its hour column; a daily one has none (the day is the bucket), and a
        column given anyway would silently not be validated per hour, so it is refused."""
        bucket = info.data.get("bucket")
        if bucket in ("day", "partition") and value is not None:
            raise ValueError(
                f"bucket_column {value!r} must be absent with bucket: {bucket} (the whole partition is the "
                "bucket)"
            )
        if bucket == "hour" and value is None:
            raise ValueError(
                "bucket_column is required with bucket: hour (the INT hour column; `hour` is the default of "
                "a dataset of UTC days), or write `bucket: partition` to validate each day as one bucket"
            )
        return value

    @model_validator(mode="before")
    @classmethod
    def _bucket_follows_the_grain(cls, data: Any) -> Any:
        """An absent `bucket` is the grain's only one where there is one: a whole hour for an hourly dataset
        (its partition column a timestamp), a whole day for local days (23 to 25 hours). UTC days keep
        `hour`, checked per hour of the day with `bucket_column`."""
        if not isinstance(data, dict) or "bucket" in data or data.get("bucket_column") is not None:
            return data
        columns = data.get("columns")
        hourly = isinstance(columns, dict) and columns.get(data.get("partition_column")) == "timestamp"
        if hourly or data.get("partition_timezone", "UTC") != "UTC":
            return {**data, "bucket": "partition"}
        return data

    @model_validator(mode="after")
    def _one_source_form(self) -> DatasetSpec:
        if (self.source_stream is None) == (self.sources is None):
            raise ValueError("declare exactly one of source_stream (one stream) or sources (several)")
        names = self.stream_names
        if not names:
            raise ValueError("sources must name at least one stream")
        doubled = sorted({n for n in names if names.count(n) > 1})
        if doubled:
            raise ValueError(f"sources name {doubled} more than once")
        rules = [("expected_rows", self.expected_rows)]
        rules += [(f"reconciliation[{i}]", r) for i, r in enumerate(self.reconciliation)]
        for where, rule in rules:
            if rule.source is not None and rule.source not in names:
                raise ValueError(f"{where}.source {rule.source!r} is not one of the sources {names}")
            if rule.source is None and len(names) > 1:
                raise ValueError(f"{where} must name its source: one of {names}")
        return self

    @model_validator(mode="after")
    def _consistent(self) -> DatasetSpec:
        if self.active_version not in self.versions:
            raise ValueError(f"active_version {self.active_version!r} is not one of {sorted(self.versions)}")
        named = [*self.bucket_columns, *self.key_columns]
        named += [rule.column for rule in self.reconciliation]
        missing = [name for name in named if name not in self.columns]
        if missing:
            raise ValueError(f"columns {missing} are used but not declared in 'columns'")
        partition_type = self.columns[self.partition_column]
        if partition_type not in ("date", "timestamp"):
            raise ValueError(
                f"partition_column {self.partition_column!r} must be of type date (daily) or timestamp "
                f"(hourly), not {partition_type}"
            )
        if partition_type == "timestamp" and self.partition_timezone != "UTC":
            raise ValueError(
                f"partition_timezone {self.partition_timezone!r} is for daily datasets: the hours of an hourly "
                "dataset are UTC hours"
            )
        if self.partition_timezone != "UTC" and self.bucket == "hour":
            raise ValueError(
                f"bucket: hour is for UTC days; a day of {self.partition_timezone} (23 to 25 hours) is "
                "validated as one bucket: write `bucket: partition`"
            )
        if partition_type == "timestamp" and self.bucket != "partition":
            raise ValueError(
                f"partition_column {self.partition_column!r} is a timestamp (an hourly dataset): each hour "
                f"is validated as one bucket, so write `bucket: partition` (not {self.bucket!r})"
            )
        if self.bucket_column and self.columns[self.bucket_column] not in ("int", "long"):
            raise ValueError(f"bucket_column {self.bucket_column!r} must be of type int")
        for column in self.bucket_columns:
            if column not in self.key_columns:
                raise ValueError(f"key_columns must include {column!r}")
        return self

    @property
    def inputs(self) -> list[SourceInput]:
        """Every source with its effective lookback, in declared order (the first is the primary)."""
        if self.sources is None:
            return [SourceInput(self.source_stream or "", self.lookback)]
        return [
            SourceInput(s, self.lookback)
            if isinstance(s, str)
            else SourceInput(s.stream, self.lookback if s.lookback is None else s.lookback)
            for s in self.sources
        ]

    @property
    def stream_names(self) -> list[str]:
        return [i.stream for i in self.inputs]

    @property
    def primary_stream(self) -> str:
        """The first source: its days are the dataset's partitions, its name is the ledger's `stream`."""
        return self.stream_names[0]

    @property
    def named_sources(self) -> bool:
        """Whether the transform takes its sources as keyword arguments (the `sources` form)."""
        return self.sources is not None

    def apply_transform(self, transform: Callable, frames: Mapping[str, Any]) -> Any:
        """A version's transform over its sources' events (DataFrames by stream), called the one way the
        spec's form declares: keyword arguments named as in `sources`, or the one stream's events."""
        return transform(**frames) if self.named_sources else transform(frames[self.primary_stream])

    def source_of(self, rule: EventsAggregate) -> str:
        """The stream an expectation aggregates: its `source`, or the only one."""
        return rule.source or self.primary_stream

    def shadow_table(self, version: str) -> str:
        return f"{self.name}__{version}"

    @property
    def grain(self) -> Grain:
        """Its partitions' span: a UTC hour when its partition column is a timestamp, else a day of its
        `partition_timezone`. Never finer than its sources' (`specs.references.grain_problems`)."""
        if self.columns[self.partition_column] == "timestamp":
            return Grain("hour")
        return Grain("day", self.partition_timezone)

    def partition_bounds(self, start: datetime, end: datetime) -> tuple[date | datetime, date | datetime]:
        """[start, end) as values of the partition column: days of a date column, instants otherwise
        (a filter compares like with like, so Iceberg deletes whole partitions on overwrite)."""
        if self.grain.unit == "day":
            zone = ZoneInfo(self.partition_timezone)
            return start.astimezone(zone).date(), end.astimezone(zone).date()
        return start, end

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
