"""Stream specs: one archived event stream, declared in YAML.

A stream spec says where the archive is and how it is laid out, how to recognise and upcast each
historical schema version to the latest, which fields carry the event id and the event time, how late
an event may arrive, and from which day partitions start.
"""

from __future__ import annotations

import os
import re
from datetime import date, timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from backfill_platform import settings
from backfill_platform.specs.common import FIELD_TYPES, FieldType, Identifier, SpecModel
from backfill_platform.specs.durations import HOUR, parse_duration

TimeFormat = Literal["iso8601", "epoch_millis"]
# Extra folders (separated by `:`) an archive location may resolve into, besides the data directory.
ARCHIVE_ROOTS_ENV = "BACKFILL_PLATFORM_ARCHIVE_ROOTS"
# Bounds of the durations a stream may declare: beyond them a read window or horizon is absurd (and
# datetime arithmetic overflows long before `99999999d`).
MAX_LATENESS = timedelta(days=30)
MAX_CLOCK_SKEW = timedelta(days=1)
MAX_REFRESH_HORIZON = timedelta(days=400)
EARLIEST_PARTITION, LATEST_PARTITION = date(1970, 1, 1), date(2200, 1, 1)
# A Kinesis stream name, as AWS accepts it.
KinesisStreamName = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,128}$")]


class ArchiveSpec(SpecModel):
    location: str = Field(
        description=(
            "Folder of the archive: absolute, or relative to the data directory; or an S3 prefix "
            "`s3://bucket/prefix` (listed and read through dagster-aws/boto3)."
        )
    )
    layout: str = Field(
        default="%Y/%m/%d/%H",
        description="strftime template of the ingestion-hour folders below the location.",
    )
    format: Literal["jsonl"] = Field(default="jsonl", description="One JSON object per line.")
    compression: Literal["gzip", "none"] = Field(
        default="gzip", description="`gzip` (`.gz` files) or `none` (plain files)."
    )
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
        if self.s3 is None:
            check_archive_root(self, settings.data_dir())
        return self

    @property
    def s3(self) -> tuple[str, str] | None:
        """(bucket, key prefix without a trailing `/`) of an `s3://` location; None for a local folder."""
        return parse_s3_location(self.location)


_URI_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
# S3's bucket naming rules (general purpose buckets): 3-63 characters, lower-case letters, digits,
# dots and hyphens, starting and ending with a letter or digit, not an IP address, no `..`.
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_IP_ADDRESS = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")


def parse_s3_location(location: str) -> tuple[str, str] | None:
    """(bucket, prefix) of `s3://bucket/prefix`, validated; None for a local path; other URIs refused."""
    scheme = _URI_SCHEME.match(location)
    if scheme is None:
        return None
    if scheme.group(1) != "s3":
        raise ValueError(
            f"field 'archive.location': {location!r}: only local folders and s3://bucket/prefix are "
            f"supported, not {scheme.group(1)}://"
        )
    bucket, _, prefix = location[len("s3://") :].partition("/")
    if not _BUCKET.match(bucket) or ".." in bucket or _IP_ADDRESS.match(bucket):
        raise ValueError(
            f"field 'archive.location': {bucket!r} is not a valid S3 bucket name (3-63 characters: "
            "lower-case letters, digits, '.' and '-', starting and ending with a letter or digit)"
        )
    prefix = prefix.strip("/")
    if prefix and any(part in ("", ".", "..") for part in prefix.split("/")):
        raise ValueError(f"field 'archive.location': prefix {prefix!r} has an empty, '.' or '..' segment")
    return bucket, prefix


def archive_roots(data_dir: Path) -> list[Path]:
    extra = [Path(p.strip()) for p in os.environ.get(ARCHIVE_ROOTS_ENV, "").split(os.pathsep) if p.strip()]
    return [Path(data_dir).resolve(), *(p.resolve() for p in extra)]


def check_archive_root(archive: ArchiveSpec, data_dir: Path) -> Path:
    """The archive's root folder, resolved (`..` and symlinks); refused outside the configured roots.

    An `s3://` location has no local root: it is refused here (see `parse_s3_location`)."""
    if parse_s3_location(archive.location) is not None:
        raise ValueError(f"field 'archive.location': {archive.location!r} is in S3, not a local folder")
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
    field: Identifier = Field(description="Raw field holding the event time.")
    format: TimeFormat = Field(
        default="iso8601", description="`iso8601` (with offset, or UTC) or `epoch_millis`."
    )


class VersionMatch(SpecModel):
    """How a record of this version is recognised: by the value of a field, or by its absence."""

    field: Identifier = Field(description="Raw field that tells the versions apart, e.g. `schema_version`.")
    equals: str | int | None = Field(default=None, description="This version has this value in `field`.")
    missing: bool = Field(default=False, description="This version has no `field` at all.")

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
    drop: Identifier | None = Field(
        default=None, description="name of a field the latest version no longer has"
    )

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
    version: int = Field(
        ge=1, description="Version number; the highest is the latest, which the events table has."
    )
    match: VersionMatch = Field(description="How a record of this version is recognised.")
    event_time_format: TimeFormat | None = Field(
        default=None, description="Overrides the stream's event-time format for this version."
    )
    fields: dict[Identifier, FieldType] = Field(description="Payload fields besides event id and time.")
    upcast: list[UpcastOp] = Field(default_factory=list, description="Steps that turn it into the latest.")


class StreamSpec(SpecModel):
    kind: Literal["stream"] = "stream"
    name: Identifier = Field(description="Stream name: the asset keys and tables are named after it.")
    description: str = Field(default="", description="Shown in the Dagster UI.")
    owner: str = Field(default="team:data-platform", description="Dagster owner of its assets.")
    archive: ArchiveSpec = Field(description="Where the archive is and how it is laid out.")
    event_id_field: Identifier = Field(
        description="Raw field holding the event id (one row per id in the events table)."
    )
    event_time: EventTimeSpec = Field(description="Raw field and format of the event time.")
    allowed_lateness: timedelta = Field(description="How long after its event time an event may arrive.")
    clock_skew: timedelta = Field(
        default=timedelta(minutes=15),
        description="How far a producer's clock may run ahead of ingestion.",
    )
    partition_grain: Literal["day"] = Field(default="day", description="Partition grain (days only).")
    first_partition: date = Field(
        description="First event-time day of the stream; earlier events are counted as `before_first_partition`."
    )
    max_quarantine_ratio: float = Field(
        default=0.01,
        ge=0,
        le=1,
        description="Blocking bound on quarantined lines per day (`quarantine_ratio` check).",
    )
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
    schema_versions: list[SchemaVersion] = Field(
        min_length=1, description="Every schema the archive holds, each upcast to the latest."
    )
    live_kinesis_stream: KinesisStreamName | None = Field(
        default=None,
        description=(
            "Name of the stream's live Kinesis stream. `backfill-platform replay` always refuses to write "
            "to it: a replay goes to a separate backfill stream."
        ),
    )
    backfill_kinesis_streams: list[KinesisStreamName] = Field(
        default_factory=list,
        description=(
            "Kinesis streams a replay of this stream may write to (an allow-list; the live stream cannot be "
            "one). `backfill-platform replay --to-kinesis` refuses any other name."
        ),
    )

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
    def _live_is_not_a_backfill_stream(self) -> StreamSpec:
        if self.live_kinesis_stream is not None and self.live_kinesis_stream in self.backfill_kinesis_streams:
            raise ValueError(
                f"backfill_kinesis_streams lists the live stream {self.live_kinesis_stream!r}: a replay must "
                "never write to the live stream"
            )
        return self

    @model_validator(mode="after")
    def _horizon_covers_lateness(self) -> StreamSpec:
        if self.refresh_horizon <= self.allowed_lateness + HOUR:
            raise ValueError(
                f"refresh_horizon {self.refresh_horizon} must exceed allowed_lateness + 1h "
                f"({self.allowed_lateness + HOUR}): no day would settle inside it"
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
                    f"version {version.version}: {sorted(clash)} are the id/time fields (event_id_field, "
                    "event_time.field), not payload"
                )
            result = upcast_field_types(version, self.latest.fields)
            if result != self.latest.fields:
                # A mistyped rename target or default field shows up here: name it, not just both dicts.
                unknown = sorted(set(result) - set(self.latest.fields))
                lacking = sorted(set(self.latest.fields) - set(result))
                raise ValueError(
                    f"version {version.version} upcasts to {result}, but the latest version has "
                    f"{dict(self.latest.fields)}"
                    + (f"; not fields of the latest version: {unknown}" if unknown else "")
                    + (f"; missing: {lacking}" if lacking else "")
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


# Ingestion metadata every events table carries besides the event id, the event time and the payload.
EVENTS_METADATA_COLUMNS = [
    ("_schema_version", "int"),
    ("_source_file", "string"),
    ("_line_number", "bigint"),
    ("_ingestion_time", "timestamp"),
]


def events_columns(spec: StreamSpec) -> list[tuple[str, str]]:
    """(name, Spark SQL type) of the stream's events table, in table order.

    Pure (no Spark import) because spec loading resolves the dataset expressions against it, before any
    session exists; the events ingestion creates and checks the table from the same list.
    """
    payload = [(name, FIELD_TYPES[kind]) for name, kind in spec.latest.fields.items()]
    return [("event_id", "string"), ("event_time", "timestamp"), *payload, *EVENTS_METADATA_COLUMNS]


def upcast_field_types(version: SchemaVersion, latest_fields: dict[str, str]) -> dict[str, str]:
    """Field name -> type after applying a version's upcast steps in order (validates each step).

    A defaulted field takes the latest version's type for that field.
    """
    fields = dict(version.fields)
    for number, step in enumerate(version.upcast, start=1):
        # Each step names a field as it is at that step: name the step and the fields it could have named.
        where = f"version {version.version}, upcast step {number}"
        if step.rename is not None:
            old, new = step.rename["from"], step.rename["to"]
            if old not in fields:
                raise ValueError(f"{where}: rename of unknown field {old!r} (fields: {sorted(fields)})")
            fields[new] = fields.pop(old)
        elif step.default is not None:
            name = step.default["field"]
            if name in fields:
                raise ValueError(f"{where}: default for {name!r}, which it already has")
            fields[name] = latest_fields.get(name) or _type_of_default(step.default["value"])
        elif step.cast is not None:
            if step.cast["field"] not in fields:
                raise ValueError(
                    f"{where}: cast of unknown field {step.cast['field']!r} (fields: {sorted(fields)})"
                )
            fields[step.cast["field"]] = step.cast["type"]
        elif step.drop is not None:
            if step.drop not in fields:
                raise ValueError(f"{where}: drop of unknown field {step.drop!r} (fields: {sorted(fields)})")
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
