"""Stream specs: one archived event stream, declared in YAML.

A stream spec says where the archive is and how it is laid out (`archive_location.py`), how to
recognise and upcast each historical schema version to the latest (`upcasts.py`), which fields carry the
event id and the event time, how late an event may arrive, from which day partitions start, and which
Kinesis streams and Kafka topics a replay may write to (`replay_targets.py`). The events table's columns follow from it.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from backfill_platform.specs.archive_location import ArchiveSpec
from backfill_platform.specs.common import (
    FIELD_TYPES,
    FieldPath,
    FieldType,
    Identifier,
    SpecModel,
    column_name,
)
from backfill_platform.specs.durations import HOUR, parse_duration
from backfill_platform.specs.grain import Grain, GrainUnit
from backfill_platform.specs.isolation import isolation_problems
from backfill_platform.specs.replay_targets import KafkaTopicName, KinesisStreamName, check_replay_targets
from backfill_platform.specs.upcasts import UpcastStep, upcast_field_types

TimeFormat = Literal["iso8601", "epoch_seconds", "epoch_millis", "epoch_micros"]
# How the producer's non-standard JSON numbers (`NaN`, `Infinity`, `-Infinity`) are read (`events/numbers.py`).
NonStandardNumbers = Literal["quarantine", "missing", "keep"]
NON_STANDARD_NUMBERS_DESCRIPTION = (
    "How to read the non-standard numbers `NaN`, `Infinity` and `-Infinity` (Python's `json.dumps` writes a "
    "missing or infinite float so): `quarantine` the record as `non_standard_number`, naming the token and "
    "the field; `missing`: the token is a missing value in any field; `keep`: NaN and ±Infinity are kept "
    "in `double` fields, and in a field of any other type the record is an `invalid_field`."
)
# Bounds of the durations a stream may declare: beyond them a read window or horizon is absurd (and
# datetime arithmetic overflows long before `99999999d`).
MAX_LATENESS = timedelta(days=30)
MAX_CLOCK_SKEW = timedelta(days=1)
MAX_REFRESH_HORIZON = timedelta(days=400)
EARLIEST_PARTITION, LATEST_PARTITION = date(1970, 1, 1), date(2200, 1, 1)


def _bounded(value: timedelta, name: str, maximum: timedelta) -> timedelta:
    if value < timedelta(0):
        raise ValueError(f"{name} {value} is negative")
    if value > maximum:
        raise ValueError(f"{name} {value} exceeds the maximum of {maximum}")
    return value


class EventTimeSpec(SpecModel):
    field: FieldPath = Field(description="Raw field holding the event time.")
    format: TimeFormat = Field(
        default="iso8601",
        description=(
            "`iso8601` (with offset, or UTC); `epoch_seconds` (integer or fractional, as Kinesis' arrival "
            "timestamps), `epoch_millis` or `epoch_micros` (integers)."
        ),
    )


class VersionMatch(SpecModel):
    """How a record of this version is recognised: by the value of a field, or by its absence."""

    field: FieldPath = Field(description="Raw field that tells the versions apart, e.g. `schema_version`.")
    equals: str | int | None = Field(default=None, description="This version has this value in `field`.")
    missing: bool = Field(default=False, description="This version has no `field` at all.")

    @model_validator(mode="after")
    def _one_rule(self) -> VersionMatch:
        if (self.equals is None) == (not self.missing):
            raise ValueError("give exactly one of 'equals: <value>' or 'missing: true'")
        return self


class SequenceSpec(SpecModel):
    """Sequence numbers each producer writes into its records (seed 004): 1, 2, 3, ... per key."""

    key: FieldPath = Field(description="Raw field naming the producer (e.g. `producer_id`).")
    field: FieldPath = Field(description="Raw field holding the producer's sequence number (an integer).")


class SchemaVersion(SpecModel):
    version: int = Field(
        ge=1, description="Version number; the highest is the latest, which the events table has."
    )
    match: VersionMatch = Field(description="How a record of this version is recognised.")
    event_time_format: TimeFormat | None = Field(
        default=None, description="Overrides the stream's event-time format for this version."
    )
    fields: dict[FieldPath, FieldType] = Field(
        description=(
            "Payload fields besides event id and time. A nested field is its dotted path "
            "(`context.device.type`), typed like any other and stored flattened (`context_device_type`)."
        )
    )
    upcast: list[UpcastStep] = Field(default_factory=list, description="Steps that turn it into the latest.")
    non_standard_numbers: NonStandardNumbers | None = Field(
        default=None,
        description=(
            "Overrides the stream's `non_standard_numbers` for records of this version (empty or `null`: "
            "no override)."
        ),
    )

    @field_validator("non_standard_numbers", mode="before")
    @classmethod
    def _empty_is_no_override(cls, value: Any) -> Any:
        # As documented: an empty value (`non_standard_numbers: ''`) is no override, as `null` is.
        return None if isinstance(value, str) and not value.strip() else value


class StreamSpec(SpecModel):
    kind: Literal["stream"] = "stream"
    name: Identifier = Field(description="Stream name: the asset keys and tables are named after it.")
    description: str = Field(default="", description="Shown in the Dagster UI.")
    owner: str = Field(default="team:data-platform", description="Dagster owner of its assets.")
    archive: ArchiveSpec = Field(description="Where the archive is and how it is laid out.")
    event_id_field: FieldPath = Field(
        description="Raw field holding the event id (one row per id in the events table)."
    )
    event_time: EventTimeSpec = Field(description="Raw field and format of the event time.")
    subject_field: FieldPath | None = Field(
        default=None,
        description=(
            "Field of the latest schema that identifies the person an event is about (e.g. `user_id`, or a "
            "nested `context.user.id`): erasure requests (`backfill-platform erase`) are matched on it, so "
            "no re-derivation or replay brings an erased subject's records back. A stream without one is "
            "not covered by erasure (`plan` and `status` say so)."
        ),
    )
    allowed_lateness: timedelta = Field(description="How long after its event time an event may arrive.")
    clock_skew: timedelta = Field(
        default=timedelta(minutes=15),
        description="How far a producer's clock may run ahead of ingestion.",
    )
    non_standard_numbers: NonStandardNumbers = Field(
        default="quarantine", description=NON_STANDARD_NUMBERS_DESCRIPTION
    )
    partition_grain: GrainUnit = Field(
        default="day",
        description=(
            "Partition grain: `day` (UTC days, keys `2026-10-01`) or `hour` (UTC hours, keys "
            "`2026-10-01-14:00`). Every dataset over the stream has its grain; a re-derivation or a "
            "promotion of an hour touches only that hour."
        ),
    )
    partition_timezone: Literal["UTC"] = Field(
        default="UTC",
        description=(
            "A stream's partitions are UTC days or hours, so `UTC` is the only value. The days of a team's "
            "time zone are a daily dataset's `partition_timezone`, rolled up from this stream's hours."
        ),
    )
    first_partition: date = Field(
        description="First event-time day of the stream; earlier events are counted as `before_first_partition`."
    )
    max_quarantine_ratio: float = Field(
        default=0.01,
        ge=0,
        le=1,
        description=(
            "Blocking bound on the share of quarantined records per partition, day or hour "
            "(`quarantine_ratio` check); a partition passes when this or `max_quarantined_per_day` holds."
        ),
    )
    max_quarantined_per_day: int = Field(
        default=0,
        ge=0,
        description=(
            "Absolute floor of the `quarantine_ratio` check: a partition (a day, or an hour of an hourly "
            "stream) with at most this many quarantined records passes whatever its ratio, so one bad line "
            "does not block a small day or a quiet hour while a large one is still held to the ratio."
        ),
    )
    allow_empty_partitions: bool = Field(
        default=False,
        description=(
            "A partition (a day, or an hour of an hourly stream) without any archive record is normal "
            "(otherwise it fails the `records_present` check)."
        ),
    )
    allow_empty_hours: bool = Field(
        default=False,
        description=(
            "An ingestion hour without any archive file is normal (a low-volume stream). Otherwise a "
            "missing hour in a day's read window keeps the day unsettled: it fails the `settled` check."
        ),
    )
    sequence: SequenceSpec | None = Field(
        default=None,
        description=(
            "Per-producer sequence numbers in the payload prove completeness: a day settles only when "
            "each producer's numbers over its read window have no hole (the check names the missing "
            "ranges). A producer's first and last numbers in a window need not follow other days'."
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
    live_kafka_topic: KafkaTopicName | None = Field(
        default=None,
        description=(
            "Name of the stream's live Kafka topic. `backfill-platform replay --to-kafka` always refuses "
            "to write to it: a replay goes to a separate backfill topic."
        ),
    )
    backfill_kafka_topics: list[KafkaTopicName] = Field(
        default_factory=list,
        description=(
            "Kafka topics a replay of this stream may write to (an allow-list; the live topic cannot be "
            "one). `backfill-platform replay --to-kafka` refuses any other name."
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

    @field_validator("partition_timezone", mode="before")
    @classmethod
    def _utc_partitions(cls, value: Any) -> Any:
        if value != "UTC":
            raise ValueError(
                f"{value!r}: a stream's partitions are UTC days or hours. Declare the days of {value!r} on a "
                "daily dataset over this stream (its `partition_timezone`): it rolls them up from the "
                "stream's hours (`partition_grain: hour`) or UTC days, each local day exactly"
            )
        return value

    @field_validator("first_partition")
    @classmethod
    def _first_partition_bounds(cls, value: date) -> date:
        if not EARLIEST_PARTITION <= value < LATEST_PARTITION:
            raise ValueError(f"{value} is not between {EARLIEST_PARTITION} and {LATEST_PARTITION}")
        return value

    @field_validator("archive_observation_cron")
    @classmethod
    def _valid_cron(cls, value: str) -> str:
        from dagster import AutomationCondition

        # The condition this cron feeds (`archive_observation_condition`) validates it as Dagster
        # schedules do; it raises Dagster's own (private) check error, hence the broad except.
        try:
            AutomationCondition.cron_tick_passed(value, "UTC")
        except Exception:
            raise ValueError(f"{value!r} is not a valid cron schedule, e.g. '0 * * * *'") from None
        return value

    @model_validator(mode="after")
    def _live_is_not_a_backfill_stream(self) -> StreamSpec:
        check_replay_targets(self.live_kinesis_stream, self.backfill_kinesis_streams)
        check_replay_targets(self.live_kafka_topic, self.backfill_kafka_topics, "backfill_kafka_topics")
        # Also the topic its own archive is written from (another stream's live targets: the loader).
        for field, reason in isolation_problems(self, {}):
            raise ValueError(f"{field}: {reason}")
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
            result = upcast_field_types(version.version, version.fields, version.upcast, self.latest.fields)
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

    @model_validator(mode="after")
    def _subject_is_a_latest_field(self) -> StreamSpec:
        # Matched on the upcast payload (so every schema version is covered through its upcasts), and
        # stored in the events table, where the forward clean finds it.
        if self.subject_field is not None and self.subject_field not in self.latest.fields:
            raise ValueError(
                f"subject_field {self.subject_field!r} is not a field of the latest schema version "
                f"(fields: {', '.join(sorted(self.latest.fields))})"
            )
        return self

    @property
    def subject_column(self) -> str | None:
        """The events table's column holding the subject, or None when the stream declares none."""
        return column_name(self.subject_field) if self.subject_field else None

    @model_validator(mode="after")
    def _fields_have_distinct_columns(self) -> StreamSpec:
        columns: dict[str, str] = {}
        for path in self.latest.fields:
            column = column_name(path)
            if column in ("event_id", "event_time"):
                raise ValueError(f"field {path!r} would be stored as column {column!r}, the event id or time")
            if column in columns:
                raise ValueError(
                    f"fields {columns[column]!r} and {path!r} would both be stored as column {column!r}"
                )
            columns[column] = path
        paths = self.source_fields()
        for path in paths:
            holder = next((other for other in paths if path.startswith(other + ".")), None)
            if holder is not None:
                raise ValueError(
                    f"field {holder!r} is declared as a value, and {path!r} as a field inside it: a field is "
                    "either a value or an object holding fields, in every version"
                )
        return self

    @field_validator("non_standard_numbers", mode="before")
    @classmethod
    def _not_yaml_null(cls, value: Any) -> Any:
        if value is None:
            raise ValueError(
                "YAML reads a bare `null` as no value: write `missing` to read the tokens as missing values "
                "(or `quarantine`, `keep`), or leave the field out"
            )
        return value

    @property
    def latest(self) -> SchemaVersion:
        return self.schema_versions[-1]

    def time_format(self, version: SchemaVersion) -> TimeFormat:
        return version.event_time_format or self.event_time.format

    def number_reading(self, version: SchemaVersion) -> NonStandardNumbers:
        """How records of `version` read a non-standard number (its own setting, else the stream's)."""
        return version.non_standard_numbers or self.non_standard_numbers

    @property
    def grain(self) -> Grain:
        """The span of one partition of its events and of every dataset over it."""
        return Grain(self.partition_grain)

    @property
    def events_table(self) -> str:
        return f"{self.name}_events"

    @property
    def quarantine_table(self) -> str:
        return f"{self.name}_quarantine"

    def source_fields(self) -> list[str]:
        """Every raw field any version reads or matches on, so one parse serves every version."""
        names = {self.event_id_field, self.event_time.field}
        if self.sequence is not None:
            names.update((self.sequence.key, self.sequence.field))
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


# Where each event sits in Kafka, for archives written by Kafka Connect (`archive.kafka_connect`, or a
# table's `archive.kafka_metadata`).
KAFKA_COLUMNS = [("_kafka_partition", "int"), ("_kafka_offset", "bigint")]


def events_columns(spec: StreamSpec) -> list[tuple[str, str]]:
    """(name, Spark SQL type) of the stream's events table, in table order.

    Pure (no Spark import) because spec loading resolves the dataset expressions against it, before any
    session exists; the events ingestion creates and checks the table from the same list.
    """
    payload = [(column_name(path), FIELD_TYPES[kind]) for path, kind in spec.latest.fields.items()]
    kafka = KAFKA_COLUMNS if spec.archive.kafka_offsets is not None else []
    return [("event_id", "string"), ("event_time", "timestamp"), *payload, *EVENTS_METADATA_COLUMNS, *kafka]
