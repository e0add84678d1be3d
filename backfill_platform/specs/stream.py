"""Stream specs: one archived event stream, declared in YAML.

A stream spec says where the archive is and how it is laid out, how to recognise and upcast each
historical schema version to the latest, which fields carry the event id and the event time, how late
an event may arrive, and from which day partitions start.
"""

from __future__ import annotations

import os
from datetime import date, timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from backfill_platform import settings
from backfill_platform.specs.common import FIELD_TYPES, FieldType, Identifier, SpecModel
from backfill_platform.specs.durations import parse_duration

TimeFormat = Literal["iso8601", "epoch_millis"]
# Extra folders (separated by `:`) an archive location may resolve into, besides the data directory.
ARCHIVE_ROOTS_ENV = "BACKFILL_PLATFORM_ARCHIVE_ROOTS"
# Bounds of the durations a stream may declare: beyond them a read window or horizon is absurd (and
# datetime arithmetic overflows long before `99999999d`).
MAX_LATENESS = timedelta(days=30)
MAX_CLOCK_SKEW = timedelta(days=1)
MAX_REFRESH_HORIZON = timedelta(days=400)
EARLIEST_PARTITION, LATEST_PARTITION = date(1970, 1, 1), date(2200, 1, 1)


class ArchiveSpec(SpecModel):
    location: str = Field(description="Folder of the archive: absolute, or relative to the data directory.")
    layout: str = Field(
        default="%Y/%m/%d/%H",
        description="strftime template of the ingestion-hour folders below the location.",
    )
    format: Literal["jsonl"] = "jsonl"
    compression: Literal["gzip", "none"] = "gzip"
    allow_outside_data_roots: bool = Field(
        default=False,
        description=(
            "Let `location` resolve outside the data directory and the folders of "
            f"{ARCHIVE_ROOTS_ENV} (otherwise such a location, e.g. `../../etc` or `/etc`, is refused)."
        ),
    )
    max_line_bytes: int = Field(
        default=1 << 20,
        ge=1024,
        le=256 << 20,
        description="Longer lines are quarantined as `line_too_long` (their first KiB is kept).",
    )

    @field_validator("layout")
    @classmethod
    def _layout_has_hour(cls, value: str) -> str:
        for token in ("%Y", "%m", "%d", "%H"):
            if token not in value:
                raise ValueError(f"layout {value!r} must contain {token} (hourly ingestion folders)")
        if ".." in value or value.startswith("/"):
            raise ValueError(f"layout {value!r} must be a relative path template")
        return value

    @model_validator(mode="after")
    def _inside_roots(self) -> ArchiveSpec:
        check_archive_root(self, settings.data_dir())
        return self


def archive_roots(data_dir: Path) -> list[Path]:
    extra = [Path(p.strip()) for p in os.environ.get(ARCHIVE_ROOTS_ENV, "").split(os.pathsep) if p.strip()]
    return [Path(data_dir).resolve(), *(p.resolve() for p in extra)]


def check_archive_root(archive: ArchiveSpec, data_dir: Path) -> Path:
    """The archive's root folder, resolved (`..` and symlinks); refused outside the configured roots."""
    location = Path(archive.location)
    root = (location if location.is_absolute() else Path(data_dir) / location).resolve()
    if archive.allow_outside_data_roots:
        return root
    roots = archive_roots(data_dir)
    if not any(root.is_relative_to(allowed) for allowed in roots):
        raise ValueError(
            f"field 'archive.location': {archive.location!r} resolves to {root}, outside the configured "
            f"data roots ({', '.join(map(str, roots))}); add its folder to {ARCHIVE_ROOTS_ENV} or set "
            "'archive.allow_outside_data_roots: true'"
        )
    return root


def _bounded(value: timedelta, name: str, maximum: timedelta) -> timedelta:
    if value < timedelta(0):
        raise ValueError(f"{name} {value} is negative")
    if value > maximum:
        raise ValueError(f"{name} {value} exceeds the maximum of {maximum}")
    return value


class EventTimeSpec(SpecModel):
    field: Identifier
    format: TimeFormat = "iso8601"


class VersionMatch(SpecModel):
    """How a record of this version is recognised: by the value of a field, or by its absence."""

    field: Identifier
    equals: str | int | None = None
    missing: bool = False

    @model_validator(mode="after")
    def _one_rule(self) -> VersionMatch:
        if (self.equals is None) == (not self.missing):
            raise ValueError("give exactly one of 'equals: <value>' or 'missing: true'")
        return self


class UpcastOp(SpecModel):
    """One step from a historical version towards the latest: exactly one of the four keys."""

    rename: dict[str, Identifier] | None = Field(default=None, description="{from: old, to: new}")
    default: dict[str, Any] | None = Field(default=None, description="{field: name, value: v}")
    cast: dict[str, str] | None = Field(default=None, description="{field: name, type: t}")
    drop: Identifier | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> UpcastOp:
        given = [k for k in ("rename", "default", "cast", "drop") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                f"an upcast step has exactly one of rename/default/cast/drop, got {given or 'none'}"
            )
        if self.rename is not None and set(self.rename) != {"from", "to"}:
            raise ValueError("rename needs exactly 'from' and 'to'")
        if self.default is not None and set(self.default) != {"field", "value"}:
            raise ValueError("default needs exactly 'field' and 'value'")
        if self.cast is not None:
            if set(self.cast) != {"field", "type"}:
                raise ValueError("cast needs exactly 'field' and 'type'")
            if self.cast["type"] not in FIELD_TYPES:
                raise ValueError(f"cast type {self.cast['type']!r} is not one of {sorted(FIELD_TYPES)}")
        return self


class SchemaVersion(SpecModel):
    version: int = Field(ge=1)
    match: VersionMatch
    event_time_format: TimeFormat | None = Field(
        default=None, description="Overrides the stream's event-time format for this version."
    )
    fields: dict[Identifier, FieldType] = Field(description="Payload fields besides event id and time.")
    upcast: list[UpcastOp] = Field(default_factory=list, description="Steps that turn it into the latest.")


class StreamSpec(SpecModel):
    kind: Literal["stream"] = "stream"
    name: Identifier
    description: str = ""
    owner: str = "team:data-platform"
    archive: ArchiveSpec
    event_id_field: Identifier
    event_time: EventTimeSpec
    allowed_lateness: timedelta = Field(description="How long after its event time an event may arrive.")
    clock_skew: timedelta = Field(
        default=timedelta(minutes=15),
        description="How far a producer's clock may run ahead of ingestion.",
    )
    partition_grain: Literal["day"] = "day"
    first_partition: date
    max_quarantine_ratio: float = Field(default=0.01, ge=0, le=1)
    allow_empty_partitions: bool = Field(
        default=False, description="A day without any archive record is normal (otherwise it fails a check)."
    )
    allow_empty_hours: bool = Field(
        default=False,
        description=(
            "An ingestion hour without any archive file is normal (a low-volume stream). Otherwise a "
            "missing hour in a day's read window keeps the day unsettled: it fails the `settled` check."
        ),
    )
    provisional_promotion: bool = Field(
        default=False,
        description=(
            "Let days whose lateness horizon has not passed yet pass the `settled` check as provisional: "
            "they are promoted, recorded as provisional, and promoted again once settled."
        ),
    )
    max_partitions_per_run: int | None = Field(
        default=None, ge=1, description="Split backfills into runs of this many days (default: one run)."
    )
    refresh_horizon: timedelta = Field(
        default=timedelta(days=7),
        description=(
            "Declarative daily refresh: how far back (from the end of the latest complete day) settled days "
            "are still requested automatically, when new or when a late archive file changes their read "
            "window. Older days are left to backfills. Must exceed allowed_lateness + 1h."
        ),
    )
    archive_observation_cron: str = Field(
        default="0 * * * *",
        description=(
            "Cron schedule (UTC) on which the automation sensor observes the archive, so that new and late "
            "files are seen (each ingestion hour's data version is its manifest fingerprint)."
        ),
    )
    schema_versions: list[SchemaVersion] = Field(min_length=1)

    @field_validator("allowed_lateness", "clock_skew", "refresh_horizon", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> timedelta:
        return parse_duration(value)

    @field_validator("allowed_lateness", "clock_skew", "refresh_horizon")
    @classmethod
    def _duration_bounds(cls, value: timedelta, info: ValidationInfo) -> timedelta:
        limits = {
            "allowed_lateness": MAX_LATENESS,
            "clock_skew": MAX_CLOCK_SKEW,
            "refresh_horizon": MAX_REFRESH_HORIZON,
        }
        return _bounded(value, info.field_name, limits[info.field_name])

    @field_validator("first_partition")
    @classmethod
    def _first_partition_bounds(cls, value: date) -> date:
        if not EARLIEST_PARTITION <= value < LATEST_PARTITION:
            raise ValueError(f"{value} is not between {EARLIEST_PARTITION} and {LATEST_PARTITION}")
        return value

    @field_validator("archive_observation_cron")
    @classmethod
    def _valid_cron(cls, value: str) -> str:
        from dagster._utils.schedules import is_valid_cron_schedule

        if not is_valid_cron_schedule(value):
            raise ValueError(f"{value!r} is not a valid cron schedule, e.g. '0 * * * *'")
        return value

    @model_validator(mode="after")
    def _horizon_covers_lateness(self) -> StreamSpec:
        if self.refresh_horizon <= self.allowed_lateness + timedelta(hours=1):
            raise ValueError(
                f"refresh_horizon {self.refresh_horizon} must exceed allowed_lateness + 1h "
                f"({self.allowed_lateness + timedelta(hours=1)}): no day would settle inside it"
            )
        return self

    @model_validator(mode="after")
    def _versions_upcast_to_latest(self) -> StreamSpec:
        numbers = [v.version for v in self.schema_versions]
        if numbers != sorted(set(numbers)):
            raise ValueError(f"schema_versions must be listed once each in increasing order, got {numbers}")
        if self.latest.upcast:
            raise ValueError(f"the latest schema version {self.latest.version} cannot have upcast steps")
        reserved = {self.event_id_field, self.event_time.field}
        for version in self.schema_versions:
            clash = reserved & set(version.fields)
            if clash:
                raise ValueError(
                    f"version {version.version}: {sorted(clash)} are the id/time fields, not payload"
                )
            result = upcast_field_types(version, self.latest.fields)
            if result != self.latest.fields:
                raise ValueError(
                    f"version {version.version} upcasts to {result}, but the latest version has "
                    f"{dict(self.latest.fields)}"
                )
        return self

    @property
    def latest(self) -> SchemaVersion:
        return self.schema_versions[-1]

    def time_format(self, version: SchemaVersion) -> TimeFormat:
        return version.event_time_format or self.event_time.format

    @property
    def events_table(self) -> str:
        return f"{self.name}_events"

    @property
    def quarantine_table(self) -> str:
        return f"{self.name}_quarantine"

    def source_fields(self) -> list[str]:
        """Every raw field any version reads or matches on, so one parse serves every version."""
        names = {self.event_id_field, self.event_time.field}
        for version in self.schema_versions:
            names.update(version.fields)
            names.add(version.match.field)
        return sorted(names)


def upcast_field_types(version: SchemaVersion, latest_fields: dict[str, str]) -> dict[str, str]:
    """Field name -> type after applying a version's upcast steps in order (validates each step).

    A defaulted field takes the latest version's type for that field.
    """
    fields = dict(version.fields)
    for step in version.upcast:
        if step.rename is not None:
            old, new = step.rename["from"], step.rename["to"]
            if old not in fields:
                raise ValueError(f"version {version.version}: rename of unknown field {old!r}")
            fields[new] = fields.pop(old)
        elif step.default is not None:
            name = step.default["field"]
            if name in fields:
                raise ValueError(f"version {version.version}: default for {name!r}, which it already has")
            fields[name] = latest_fields.get(name) or _type_of_default(step.default["value"])
        elif step.cast is not None:
            if step.cast["field"] not in fields:
                raise ValueError(f"version {version.version}: cast of unknown field {step.cast['field']!r}")
            fields[step.cast["field"]] = step.cast["type"]
        elif step.drop is not None:
            if step.drop not in fields:
                raise ValueError(f"version {version.version}: drop of unknown field {step.drop!r}")
            del fields[step.drop]
    return fields


def _type_of_default(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "long"
    if isinstance(value, float):
        return "double"
    return "string"
