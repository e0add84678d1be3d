"""Where a stream's archive is: a local folder confined to the data roots, or an S3 prefix.

A location is checked when the spec loads: an `s3://` prefix must name a valid bucket and a clean prefix in
a bucket of BACKFILL_PLATFORM_ARCHIVE_S3_BUCKETS, and a local folder must resolve (after `..` and symlinks)
inside the data directory or a folder of BACKFILL_PLATFORM_ARCHIVE_ROOTS. Both lists are the operator's
settings (environment variables): a spec cannot widen them. Neither may overlap the warehouse.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from backfill_platform import settings
from backfill_platform.specs.common import Identifier, SpecModel, check_name
from backfill_platform.specs.isolation import check_archive_table
from backfill_platform.specs.replay_targets import KafkaTopicName

# The operator's settings (never a spec's): extra folders (separated by `:`) an archive location may
# resolve into besides the data directory, and the S3 buckets an `s3://` location may name.
ARCHIVE_ROOTS_ENV = settings.ARCHIVE_ROOTS_ENV
ARCHIVE_S3_BUCKETS_ENV = settings.ARCHIVE_S3_BUCKETS_ENV


def check_edges(kafka: KafkaConnectSpec | KafkaMetadataSpec) -> KafkaConnectSpec | KafkaMetadataSpec:
    """`edges_from_topic` asks a live topic and compares contiguous offsets: it needs both."""
    if kafka.edges_from_topic and (kafka.topic is None or kafka.offsets_have_gaps):
        raise ValueError(
            "edges_from_topic needs `topic` (the live topic to ask) and contiguous offsets "
            "(offsets_have_gaps: false)"
        )
    return kafka


class KafkaConnectSpec(SpecModel):
    """Files written by Kafka Connect's S3 sink, named `<topic>+<partition>+<startOffset>.<ext>`."""

    topic: KafkaTopicName | None = Field(
        default=None, description="The topic every file name must carry (default: whichever it names)."
    )
    offsets_have_gaps: bool = Field(
        default=False,
        description=(
            "The topic's offsets legitimately skip (a compacted or transactional topic): completeness is "
            "then proven by ingestion hours, as for other archives, instead of by contiguous offsets, and "
            "`_kafka_offset` is null (a record's position in its file no longer tells its offset)."
        ),
    )
    edges_from_topic: bool = Field(
        default=False,
        description=(
            "Also prove each read window's edges against the live topic (`topic`, on the cluster of "
            "BACKFILL_PLATFORM_KAFKA_BOOTSTRAP): per partition, the broker's offsets for the window's start "
            "and end times must be the first and last offsets its files hold, so a file lost at a window's "
            "edge is named like one lost inside it. Needs files in the hour of their records' Kafka "
            "timestamps (TimeBasedPartitioner, timestamp.extractor=Record). A partition the topic no longer "
            "retains, or a topic that cannot be asked, falls back to the files' own offsets; the settled "
            "check says which proof it used."
        ),
    )

    @model_validator(mode="after")
    def _edges_need_the_topic(self) -> KafkaConnectSpec:
        return check_edges(self)


_COLUMN = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_TABLE = re.compile(r"[a-z][a-z0-9_]{0,62}\.[a-z][a-z0-9_]{0,62}")


def check_column_name(value: str) -> str:
    """A column of an archive table: letters, digits and `_` (`_kafka_metadata_timestamp` included)."""
    return check_name(value, _COLUMN, "a plain column name (letters, digits and '_')")


def check_table_name(value: str) -> str:
    return check_name(
        value, _TABLE, "`namespace.table` (lower-case letters, digits and '_', each starting with a letter)"
    )


ColumnName = Annotated[str, AfterValidator(check_column_name)]
IcebergTableName = Annotated[str, AfterValidator(check_table_name)]


class KafkaMetadataSpec(SpecModel):
    """The Kafka record metadata Iceberg's Kafka Connect sink writes with each row
    (`KafkaMetadataTransform`: `<prefix>_topic`, `_partition`, `_offset`, `_timestamp`)."""

    prefix: ColumnName = Field(default="_kafka_metadata", description="The columns' common prefix.")
    topic: KafkaTopicName | None = Field(
        default=None, description="The topic whose rows the stream reads (default: all)."
    )
    offsets_have_gaps: bool = Field(
        default=False,
        description=(
            "The topic's offsets legitimately skip (compacted or transactional topics, tombstones, records "
            "the connector dropped): completeness is then proven by ingestion hours instead. Contiguous "
            "offsets inside a window also need Kafka timestamps that rise with offsets (LogAppendTime)."
        ),
    )

    edges_from_topic: bool = Field(
        default=False,
        description=(
            "Also prove each read window's edges against the live topic (`topic`, on the cluster of "
            "BACKFILL_PLATFORM_KAFKA_BOOTSTRAP): per partition, the broker's offsets for the window's start "
            "and end times must be the first and last the window's rows hold, so rows lost at a window's "
            "edge are named like rows lost inside it. A partition beyond the topic's retention, or a topic "
            "that cannot be asked, falls back to the rows' own offsets; the settled check says which proof."
        ),
    )

    @model_validator(mode="after")
    def _edges_need_the_topic(self) -> KafkaMetadataSpec:
        return check_edges(self)

    def column(self, name: str) -> str:
        return f"{self.prefix}_{name}"


class ArchiveSpec(SpecModel):
    location: str | None = Field(
        default=None,
        description=(
            "Folder of the archive: absolute, or relative to the data directory; or an S3 prefix "
            "`s3://bucket/prefix` (listed and read through dagster-aws/boto3). Not with `iceberg_table`. "
            "Where it may be is the operator's setting, not the spec's: a folder inside the data directory "
            "or one of BACKFILL_PLATFORM_ARCHIVE_ROOTS, a bucket (or prefix) of "
            "BACKFILL_PLATFORM_ARCHIVE_S3_BUCKETS (none when unset); never overlapping the warehouse."
        ),
    )
    iceberg_table: IcebergTableName | None = Field(
        default=None,
        description=(
            "The archive is an Iceberg table of the platform's catalog, `namespace.table` (e.g. written by "
            "Iceberg's Kafka Connect sink, Firehose or a Flink job), instead of a folder: ingestion hours "
            "come from `ingestion_time`, a day reads its read window from one pinned snapshot, and an "
            "hour's data version is the last append that touched it (compactions and expiry change none). "
            "Never a table of the namespaces the platform writes (`raw`, `shadow`, `prod`, `platform`)."
        ),
    )
    catalog: Identifier | None = Field(
        default=None,
        description=(
            "`iceberg_table` only: the REST catalog holding the table, when it is not the platform's own "
            "(e.g. the landing catalog a Kafka Connect sink writes to), configured by "
            "BACKFILL_PLATFORM_ARCHIVE_CATALOG_<NAME>_URI (and `_WAREHOUSE`, `_TOKEN`, `_CREDENTIAL`, "
            "`_S3_ENDPOINT`). Default: the platform's catalog."
        ),
    )
    ingestion_time: ColumnName = Field(
        default="_kafka_metadata_timestamp",
        description=(
            "`iceberg_table` only: the column of each row's ingestion time, a timestamp or epoch "
            "milliseconds (default: the Kafka record timestamp Iceberg's Kafka Connect sink writes)."
        ),
    )
    payload_column: ColumnName | None = Field(
        default=None,
        description=(
            "`iceberg_table` only: a column holding each record as JSON text. Without it, a record is "
            "its row's other columns written as one JSON object (typed columns; the ingestion and Kafka "
            "metadata columns left out)."
        ),
    )
    kafka_metadata: KafkaMetadataSpec | None = Field(
        default=None,
        description=(
            "`iceberg_table` only: the rows carry the Kafka Connect sink's record metadata "
            "(`<prefix>_partition`, `<prefix>_offset`): the events keep `_kafka_partition` and "
            "`_kafka_offset`, and a day settles only when, per Kafka partition, the offsets of its read "
            "window's rows are contiguous."
        ),
    )
    layout: str = Field(
        default="%Y/%m/%d/%H",
        description="strftime template of the ingestion-hour folders below the location.",
    )
    format: Literal["jsonl", "json_concatenated", "parquet", "avro"] = Field(
        default="jsonl",
        description=(
            "`jsonl`: one JSON object per line. `json_concatenated`: objects back to back (Firehose "
            "without a record delimiter), whitespace or newlines between them allowed. `parquet` and "
            "`avro` (object container files): each row is a record. The record number of a file "
            "(`_line_number`) is its line, object or row."
        ),
    )
    compression: Literal["gzip", "none"] = Field(
        default="gzip", description="`gzip` (`.gz` files) or `none` (plain files)."
    )
    kafka_connect: KafkaConnectSpec | None = Field(
        default=None,
        description=(
            "The files are Kafka Connect S3 sink files (`layout` then matches its time folders, e.g. "
            "`year=%Y/month=%m/day=%d/hour=%H`): the events keep `_kafka_partition` and `_kafka_offset`, "
            "and a day settles only when, per Kafka partition, the offsets of its read window's files are "
            "contiguous (a start offset plus the file's record count is the next file's start)."
        ),
    )
    max_line_bytes: int = Field(
        default=1 << 20,
        ge=1024,
        le=256 << 20,
        description="Longer records are quarantined as `line_too_long` (their first KiB is kept).",
    )

    @model_validator(mode="before")
    @classmethod
    def _no_self_granted_roots(cls, data: object) -> object:
        if isinstance(data, dict) and "allow_outside_data_roots" in data:
            raise ValueError(
                "'allow_outside_data_roots' is no longer a spec field: where an archive may be is the "
                f"operator's decision, not a spec's; the operator lists its folder in {ARCHIVE_ROOTS_ENV} "
                f"(or an S3 bucket in {ARCHIVE_S3_BUCKETS_ENV})"
            )
        return data

    @field_validator("iceberg_table")
    @classmethod
    def _not_a_platform_table(cls, value: str | None) -> str | None:
        return None if value is None else check_archive_table(value)

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
    def _one_kind(self) -> ArchiveSpec:
        if (self.location is None) == (self.iceberg_table is None):
            raise ValueError("give exactly one of 'location' (a folder or S3 prefix) or 'iceberg_table'")
        if self.iceberg_table is None and (self.payload_column or self.kafka_metadata or self.catalog):
            raise ValueError(
                "'catalog', 'payload_column' and 'kafka_metadata' apply to an 'iceberg_table' archive only"
            )
        if self.iceberg_table is not None and self.kafka_connect is not None:
            raise ValueError(
                "'kafka_connect' describes Kafka Connect's S3 sink files; for a table written by Iceberg's "
                "Kafka Connect sink, use 'kafka_metadata'"
            )
        return self

    @model_validator(mode="after")
    def _inside_roots(self) -> ArchiveSpec:
        if self.location is not None:
            if self.s3 is None:
                check_archive_root(self, settings.data_dir())
            else:
                check_s3_location(self.location)
        return self

    @property
    def s3(self) -> tuple[str, str] | None:
        """(bucket, key prefix without a trailing `/`) of an `s3://` location; None for a local folder
        or a table."""
        return None if self.location is None else parse_s3_location(self.location)

    @property
    def kafka_offsets(self) -> KafkaConnectSpec | KafkaMetadataSpec | None:
        """Where the records' Kafka partitions and offsets come from: file names or table columns."""
        return self.kafka_connect or self.kafka_metadata


_URI_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
# S3's bucket naming rules (general purpose buckets): 3-63 characters, lower-case letters, digits,
# dots and hyphens, starting and ending with a letter or digit, not an IP address, no `..`.
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_IP_ADDRESS = re.compile(r"\d{1,3}(\.\d{1,3}){3}")


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
    if not _BUCKET.fullmatch(bucket) or ".." in bucket or _IP_ADDRESS.fullmatch(bucket):
        raise ValueError(
            f"field 'archive.location': {bucket!r} is not a valid S3 bucket name (3-63 characters: "
            "lower-case letters, digits, '.' and '-', starting and ending with a letter or digit)"
        )
    prefix = prefix.strip("/")
    if prefix and any(part in ("", ".", "..") for part in prefix.split("/")):
        raise ValueError(f"field 'archive.location': prefix {prefix!r} has an empty, '.' or '..' segment")
    return bucket, prefix


def archive_roots(data_dir: Path) -> list[Path]:
    """The data directory and the folders of ARCHIVE_ROOTS_ENV, resolved (the operator's settings)."""
    return [Path(data_dir).resolve(), *settings.archive_roots()[1:]]


def _overlaps(a: Path, b: Path) -> bool:
    return a.is_relative_to(b) or b.is_relative_to(a)


def check_archive_root(archive: ArchiveSpec, data_dir: Path) -> Path:
    """The archive's root folder, resolved (`..` and symlinks); refused outside the configured roots, and
    where it holds or lies in the warehouse the platform writes (other streams' tables) or is the data
    directory itself (the platform's catalog and run storage).

    An `s3://` location has no local root: it is refused here (see `check_s3_location`)."""
    if archive.location is None:
        raise ValueError(f"the archive is the Iceberg table {archive.iceberg_table!r}, not a folder")
    if parse_s3_location(archive.location) is not None:
        raise ValueError(f"field 'archive.location': {archive.location!r} is in S3, not a local folder")
    location = Path(archive.location)
    data = Path(data_dir).resolve()
    root = (location if location.is_absolute() else data / location).resolve()
    roots = archive_roots(data)
    if not any(root.is_relative_to(allowed) for allowed in roots):
        raise ValueError(
            f"field 'archive.location': {archive.location!r} resolves to {root}, outside the configured "
            f"data roots ({', '.join(map(str, roots))}); the operator allows a folder by adding it to "
            f"{ARCHIVE_ROOTS_ENV} (a spec cannot)"
        )
    warehouse = settings.warehouse_location()
    if warehouse.startswith("file://") or warehouse.startswith("/"):
        written = Path(warehouse.removeprefix("file://")).resolve()
        if _overlaps(root, written):
            raise ValueError(
                f"field 'archive.location': {archive.location!r} resolves to {root}, which overlaps the "
                f"warehouse the platform writes ({written}): an archive never reads the platform's tables"
            )
    if root == data:
        raise ValueError(
            f"field 'archive.location': {archive.location!r} is the data directory itself ({data}), which "
            "holds the platform's catalog, warehouse and run storage; name the archive's own folder"
        )
    return root


def check_s3_location(location: str) -> tuple[str, str]:
    """(bucket, prefix) of an `s3://` location the operator allows (ARCHIVE_S3_BUCKETS_ENV lists its
    bucket, or a prefix of its key), and not overlapping the warehouse the platform writes."""
    bucket, prefix = parse_s3_location(location) or ("", "")
    allowed = settings.archive_s3_prefixes()
    if not any(bucket == b and _key_within(prefix, p) for b, p in allowed):
        listed = ", ".join(f"{b}/{p}" if p else b for b, p in allowed) or "none"
        raise ValueError(
            f"field 'archive.location': {location!r}: bucket {bucket!r} is not one the operator allows "
            f"archives in (allowed: {listed}); the operator lists it in {ARCHIVE_S3_BUCKETS_ENV}"
        )
    configured = settings.warehouse_location()
    warehouse = parse_s3_location(configured) if configured.startswith("s3://") else None
    if (
        warehouse is not None
        and warehouse[0] == bucket
        and (_key_within(prefix, warehouse[1]) or _key_within(warehouse[1], prefix))
    ):
        raise ValueError(
            f"field 'archive.location': {location!r} overlaps the warehouse the platform writes "
            f"({configured}): an archive never reads the platform's tables"
        )
    return bucket, prefix


def _key_within(key: str, prefix: str) -> bool:
    """`key` is `prefix` or below it, segment by segment (`a/bc` is not below `a/b`)."""
    return not prefix or key == prefix or key.startswith(prefix + "/")
