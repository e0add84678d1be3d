"""Erasure after the fact: clean forward, purge history within a bound, and audit every retained snapshot.

The events pass already erases requested subjects on every re-derivation (`pipeline/events/ingest.py`).
This module handles the rows that were written *before* a request was filed:

- `clean_forward` deletes the subject's rows from the stream's events table and from every shadow and
  production table whose columns hold the stream's subject column, by copy-on-write row deletes (one commit
  per table, the request ids and the requests' snapshot on the commit), nulls the text of the subject's
  quarantined lines, and records each clean in `platform.erasure_cleans`. Datasets that aggregate the
  subject away are re-derived instead: the clean names their affected days.
- `purge` expires the snapshots older than each table's latest clean and removes the orphan files they
  leave, so no retained snapshot holds the subject any more.
- `audit` reads every retained snapshot of every table that can hold a subject and counts the rows of
  requested subjects, each hit with the date by which a purge must have removed it.

Deletes are copy-on-write on purpose: an equality or merge-on-read delete hides rows only from data files
written before it (a later backfill's files are not covered), and leaves the rows in the data files.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from pyspark.java_gateway import ensure_callback_server_started
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from backfill_platform.lakehouse.snapshots import find_snapshot, iceberg_table, top_level_columns
from backfill_platform.lakehouse.tables import (
    PLATFORM_NAMESPACE,
    WRITE_ID,
    ensure_table,
    read_at,
    table_exists,
    table_id,
)
from backfill_platform.pipeline.erasure.requests import (
    ALL_STREAMS,
    HONORED_PROPERTY,
    Requests,
    erasure_key,
    file_requests,
    requests_for,
    requests_table,
    subject_hash,
)
from backfill_platform.pipeline.erasure.subjects import is_requested
from backfill_platform.pipeline.events.ingest import ERASED_DETAIL
from backfill_platform.pipeline.names import events_table, production_table, quarantine_table, shadow_table
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.stream import StreamSpec

CLEANS_TABLE = "erasure_cleans"
CLEAN_COLUMNS = [
    ("request_ids", "string"),
    ("table_name", "string"),
    ("kind", "string"),  # events, quarantine, shadow, production
    ("snapshot_id", "bigint"),  # the clean's commit (null when the table held no such row)
    ("rows_cleaned", "bigint"),
    ("requests_snapshot_id", "bigint"),
    ("cleaned_at", "timestamp"),
]
# On every clean commit: which requests it honors (their ids; the requests' snapshot is HONORED_PROPERTY).
REQUEST_IDS_PROPERTY = "backfill_platform.erasure-request-ids"
ACTION_PROPERTY = "backfill_platform.action"
PURGE_WITHIN_ENV = "BACKFILL_PLATFORM_ERASURE_PURGE_WITHIN"
DEFAULT_PURGE_WITHIN = timedelta(days=7)
# Files younger than this are never removed as orphans: a write still running has written files that no
# snapshot references yet. Iceberg's procedure defaults to 3 days and refuses less than 24 hours; the
# files a clean made unreachable are deleted by `expire_snapshots` itself, so orphans (files of failed
# writes) are removed a day later, by the next purge.
ORPHAN_SAFETY = timedelta(hours=24)
COPY_ON_WRITE = {"write.delete.mode": "copy-on-write", "write.update.mode": "copy-on-write"}


def purge_within() -> timedelta:
    """The declared bound between a clean and the purge of the snapshots that still hold the subject:
    `BACKFILL_PLATFORM_ERASURE_PURGE_WITHIN` in days (`7`, `7d`), default 7 days. An environment variable
    like every deployment setting: it is an operations promise, not a property of a stream or dataset."""
    value = os.environ.get(PURGE_WITHIN_ENV, "").strip().lower().removesuffix("d")
    if not value:
        return DEFAULT_PURGE_WITHIN
    try:
        days = float(value)
    except ValueError:
        raise ValueError(f"{PURGE_WITHIN_ENV} must be a number of days, e.g. 7d") from None
    if days < 0:
        raise ValueError(f"{PURGE_WITHIN_ENV} must not be negative")
    return timedelta(days=days)


@dataclass(frozen=True)
class HeldTable:
    """A platform table that can hold a stream's subjects, and the column (or raw-line path) that does."""

    stream: str
    identifier: str
    kind: str  # events, quarantine, shadow, production
    column: str  # the subject column; for the quarantine, the raw field's JSON path (`user_id`)
    dataset: str | None = None


@dataclass(frozen=True)
class TableClean:
    table: str
    kind: str
    rows: int
    snapshot_id: int | None


@dataclass(frozen=True)
class Rederive:
    """A dataset that aggregates the subject away: its affected days are re-derived by a backfill."""

    dataset: str
    days: list[str]

    @property
    def command(self) -> str:
        end = date.fromisoformat(self.days[-1]) + timedelta(days=1)
        return (
            f"backfill-platform backfill --dataset {self.dataset} --start {self.days[0]} --end {end} "
            "--reason erasure"
        )


@dataclass
class ForwardClean:
    request_ids: list[str]
    requests_snapshot_id: int | None
    cleans: list[TableClean] = field(default_factory=list)
    rederive: list[Rederive] = field(default_factory=list)
    not_covered: list[str] = field(default_factory=list)  # streams in scope without a subject_field


def streams_in_scope(streams: Mapping[str, StreamSpec], scope: str) -> list[StreamSpec]:
    if scope == ALL_STREAMS:
        return [streams[name] for name in sorted(streams)]
    if scope not in streams:
        raise ValueError(f"unknown stream {scope!r}; known: {sorted(streams)}")
    return [streams[scope]]


def held_tables(
    spark: SparkSession, stream: StreamSpec, datasets: Iterable[DatasetSpec], with_quarantine: bool = True
) -> tuple[list[HeldTable], list[DatasetSpec]]:
    """The existing tables over `stream` that hold its subject column, and the datasets over it that do
    not (their tables aggregate the subject away). Shadows are those of the declared versions."""
    column = stream.subject_column
    if column is None:
        return [], []
    held = [HeldTable(stream.name, events_table(spark, stream), "events", column)]
    if with_quarantine:
        held.append(
            HeldTable(stream.name, quarantine_table(spark, stream), "quarantine", stream.subject_field or "")
        )
    aggregated = []
    for spec in datasets:
        if stream.name not in spec.stream_names:
            continue
        if column not in spec.columns:
            aggregated.append(spec)
            continue
        for version in spec.versions:
            held.append(
                HeldTable(stream.name, shadow_table(spark, spec, version), "shadow", column, spec.name)
            )
        held.append(HeldTable(stream.name, production_table(spark, spec), "production", column, spec.name))
    return [t for t in held if table_exists(spark, t.identifier)], aggregated


def _quarantine_subject(path: str) -> Column:
    """The subject of a quarantined line: the raw field at the stream's `subject_field` path, as text."""
    return F.trim(F.get_json_object(F.col("line"), f"$.{path}"))


def subject_rows(df: DataFrame, table: HeldTable, requests: Requests, key: bytes) -> DataFrame:
    """The rows of `df` (a read of `table`) that belong to requested subjects."""
    if table.kind == "quarantine":
        return df.where(
            F.col("line").isNotNull() & is_requested(_quarantine_subject(table.column), requests, key)
        )
    return df.where(is_requested(F.col(table.column).cast("string"), requests, key))


def ensure_cleans(spark: SparkSession) -> str:
    identifier = table_id(spark, PLATFORM_NAMESPACE, CLEANS_TABLE)
    ensure_table(spark, identifier, CLEAN_COLUMNS)
    return identifier


def _with_commit_properties(spark: SparkSession, properties: Mapping[str, str], statement: str) -> None:
    """Run one SQL row-level statement with `properties` on the snapshot it commits.

    Spark's SQL `DELETE`/`UPDATE` take no write options; Iceberg reads extra snapshot properties of such a
    commit from `CommitMetadata`, a thread-local of the JVM thread that runs the statement. The statement is
    therefore run from Java, inside `CommitMetadata.withCommitProperties`, through a Python callback
    (PySpark's pinned threads keep the callback on that JVM thread)."""
    ensure_callback_server_started(spark.sparkContext._gateway)
    jvm = spark.sparkContext._jvm
    java_properties = jvm.java.util.HashMap()
    for key, value in properties.items():
        java_properties.put(key, value)

    class _Statement:
        def call(self) -> None:
            spark.sql(statement)

        class Java:
            implements = ["java.util.concurrent.Callable"]

    jvm.org.apache.iceberg.spark.CommitMetadata.withCommitProperties(
        java_properties, _Statement(), jvm.java.lang.RuntimeException().getClass()
    )


def _ensure_copy_on_write(spark: SparkSession, identifier: str) -> None:
    listed = ", ".join(f"'{k}'='{v}'" for k, v in COPY_ON_WRITE.items())
    spark.sql(f"ALTER TABLE {identifier} SET TBLPROPERTIES ({listed})")


def _total_records(spark: SparkSession, identifier: str, snapshot_id: int | None) -> int:
    if snapshot_id is None:
        return 0
    snapshot = iceberg_table(spark, identifier).snapshot(int(snapshot_id))
    return int(snapshot.summary().get("total-records") or 0)


def clean_table(
    spark: SparkSession, table: HeldTable, requests: Requests, request_ids: list[str], key: bytes
) -> tuple[TableClean, list[str]]:
    """Delete (or, for the quarantine, strip the text of) the requested subjects' rows of one table, in one
    copy-on-write commit; return the clean and the event days it touched (events only).

    The rows are found by hashing inside Spark; the statement names them by a temporary view of their
    subject values, so neither the subjects nor the key appear in the SQL text Spark shows and logs."""
    current = spark.table(table.identifier)
    matched = subject_rows(current, table, requests, key)
    view = f"_erasure_{uuid.uuid4().hex}"
    if table.kind == "quarantine":
        matched.select("_source_file", "_line_number").distinct().cache().createOrReplaceTempView(view)
    else:
        matched.select(F.col(table.column).alias("_subject")).distinct().cache().createOrReplaceTempView(view)
    days: list[str] = []
    if table.kind == "events":
        days = sorted(
            {r[0].isoformat() for r in matched.select(F.to_date("event_time")).distinct().collect()}
        )
    count = spark.table(view).count()
    if count == 0:
        spark.catalog.dropTempView(view)
        return TableClean(table.identifier, table.kind, 0, None), days
    _ensure_copy_on_write(spark, table.identifier)
    write_id = uuid.uuid4().hex
    properties = {
        ACTION_PROPERTY: "erasure-clean",
        REQUEST_IDS_PROPERTY: ",".join(request_ids),
        HONORED_PROPERTY: str(requests.snapshot_id),
        WRITE_ID: write_id,
    }
    if table.kind == "quarantine":
        # The line keeps its place in the accounting (file, line number, reason); its text goes, and the
        # detail and id with it, since a detail may quote the line's values: as the events pass leaves a
        # requested subject's quarantined line (`ERASED_DETAIL`).
        statement = (
            f"UPDATE {table.identifier} SET line = NULL, raw_bytes = NULL, event_id = NULL, "
            f"detail = '{ERASED_DETAIL}' "
            f"WHERE (_source_file, _line_number) IN (SELECT _source_file, _line_number FROM {view})"
        )
    else:
        statement = f"DELETE FROM {table.identifier} WHERE {table.column} IN (SELECT _subject FROM {view})"
    try:
        _with_commit_properties(spark, properties, statement)
    finally:
        spark.catalog.dropTempView(view)
    snapshot = find_snapshot(spark, table.identifier, WRITE_ID, write_id)[0]
    if table.kind == "quarantine":
        rows = count  # lines stripped of their text, not removed
    else:
        rows = _total_records(spark, table.identifier, snapshot["parent_id"]) - _total_records(
            spark, table.identifier, snapshot["snapshot_id"]
        )
    return TableClean(table.identifier, table.kind, rows, snapshot["snapshot_id"]), days


def clean_forward(
    spark: SparkSession,
    streams: Mapping[str, StreamSpec],
    datasets: Mapping[str, DatasetSpec],
    scope: str,
    request_ids: list[str] | None = None,
) -> ForwardClean:
    """Clean the tables of every stream in `scope` (a stream's name, or `*`) of the subjects requested for
    it now (the current requests, earlier ones included: a clean is idempotent), and record each clean."""
    key = erasure_key()
    result = ForwardClean(list(request_ids or []), None)
    records = []
    now = datetime.now(UTC)
    for stream in streams_in_scope(streams, scope):
        if stream.subject_column is None:
            result.not_covered.append(stream.name)
            continue
        requests = requests_for(spark, stream.name, key=key)
        if not requests:
            continue
        result.requests_snapshot_id = requests.snapshot_id
        ids = result.request_ids or sorted({i for ids in requests.request_ids.values() for i in ids})
        tables, aggregated = held_tables(spark, stream, datasets.values())
        days: list[str] = []
        for table in tables:
            clean, touched = clean_table(spark, table, requests, ids, key)
            days += touched
            result.cleans.append(clean)
            records.append(
                (
                    ",".join(ids),
                    clean.table,
                    clean.kind,
                    clean.snapshot_id,
                    clean.rows,
                    requests.snapshot_id,
                    now,
                )
            )
        if days:
            result.rederive += [
                Rederive(spec.name, sorted(set(_dataset_days(spec, days)))) for spec in aggregated
            ]
    if records:
        schema = ", ".join(f"{name} {kind}" for name, kind in CLEAN_COLUMNS)
        spark.createDataFrame(records, schema).writeTo(ensure_cleans(spark)).append()
    return result


def _dataset_days(spec: DatasetSpec, event_days: list[str]) -> list[str]:
    """The dataset days that read the affected event days: each day itself, the days whose lookback reaches
    back into it, and the neighbours of a dataset of local days (a UTC day straddles two)."""
    after = max(i.days_back for i in spec.inputs)
    around = 0 if spec.grain.zone == "UTC" else 1
    out = set()
    for text in event_days:
        day = date.fromisoformat(text)
        for offset in range(-around, after + around + 1):
            out.add((day + timedelta(days=offset)).isoformat())
    return sorted(out)


def erase(
    spark: SparkSession,
    streams: Mapping[str, StreamSpec],
    datasets: Mapping[str, DatasetSpec],
    subjects: Iterable[str],
    scope: str,
    reason: str,
    request_id: str | None = None,
) -> ForwardClean:
    """File the requests (scope: a stream's name or `*`) and clean forward at once."""
    streams_in_scope(streams, scope)  # an unknown stream is refused before anything is filed
    filed, _snapshot = file_requests(spark, subjects, scope, reason, request_id)
    return clean_forward(spark, streams, datasets, scope, [f.request_id for f in filed])


# Purge


@dataclass(frozen=True)
class Purged:
    table: str
    cleaned_at: datetime
    expired_snapshots: int
    data_files_deleted: int
    orphan_files_removed: int
    other_refs: list[str]  # tags and branches (not the platform's: it makes none) still pinning snapshots


def _cleans(spark: SparkSession) -> DataFrame | None:
    identifier = table_id(spark, PLATFORM_NAMESPACE, CLEANS_TABLE)
    return spark.table(identifier) if table_exists(spark, identifier) else None


def _committed_at(spark: SparkSession, identifier: str, snapshot_id: int) -> datetime | None:
    snapshot = iceberg_table(spark, identifier).snapshot(int(snapshot_id))
    return None if snapshot is None else datetime.fromtimestamp(snapshot.timestampMillis() / 1000, UTC)


def purge(spark: SparkSession, older_than: timedelta = timedelta(0)) -> list[Purged]:
    """For every table cleaned at least `older_than` ago: expire the snapshots committed before its latest
    such clean (the table's current snapshot always stays) and remove the orphan files written before it
    and at least `ORPHAN_SAFETY` ago. Tags and branches pinning older snapshots are reported, not dropped."""
    cleans = _cleans(spark)
    if cleans is None:
        return []
    now = datetime.now(UTC)
    latest: dict[str, datetime] = {}
    for row in cleans.where(F.col("snapshot_id").isNotNull()).collect():
        at = (
            _committed_at(spark, row["table_name"], row["snapshot_id"])
            if table_exists(spark, row["table_name"])
            else None
        )
        if at is not None and at <= now - older_than:
            latest[row["table_name"]] = max(at, latest.get(row["table_name"], at))
    catalog = spark.conf.get("spark.sql.defaultCatalog")
    out = []
    for identifier, at in sorted(latest.items()):
        name = identifier.split(".", 1)[1]
        expired = spark.sql(
            f"CALL {catalog}.system.expire_snapshots(table => '{name}', "
            f"older_than => TIMESTAMP '{_timestamp(at)}', retain_last => 1)"
        ).collect()[0]
        orphans_before = min(at, now - ORPHAN_SAFETY)
        orphans = spark.sql(
            f"CALL {catalog}.system.remove_orphan_files(table => '{name}', "
            f"older_than => TIMESTAMP '{_timestamp(orphans_before)}')"
        ).collect()
        refs = iceberg_table(spark, identifier).refs()
        others = [str(r) for r in refs.keySet() if str(r) != "main"]
        out.append(
            Purged(
                identifier,
                at,
                _expired_count(expired),
                int(expired["deleted_data_files_count"]),
                len(orphans),
                sorted(others),
            )
        )
    return out


def _expired_count(row: Any) -> int:
    return int(row["deleted_manifest_lists_count"])  # one manifest list per expired snapshot


def _timestamp(at: datetime) -> str:
    """A literal for Spark's session time zone (the platform runs Spark in UTC)."""
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


# Audit


@dataclass(frozen=True)
class Hit:
    table: str
    snapshot_id: int
    committed_at: datetime
    rows: int
    purge_by: datetime

    @property
    def overdue(self) -> bool:
        return datetime.now(UTC) > self.purge_by


@dataclass
class Audit:
    tables: list[str] = field(default_factory=list)
    snapshots_read: int = 0
    hits: list[Hit] = field(default_factory=list)
    rederived: list[str] = field(default_factory=list)  # datasets covered by re-derivation

    @property
    def overdue(self) -> list[Hit]:
        return [h for h in self.hits if h.overdue]


def _requested_at(spark: SparkSession) -> dict[str, datetime]:
    """Per subject hash, when it was first requested."""
    rows = spark.table(requests_table(spark)).groupBy("subject_hash").agg(F.min("requested_at")).collect()
    return {r[0]: r[1].replace(tzinfo=UTC) for r in rows}


def audit(
    spark: SparkSession, streams: Mapping[str, StreamSpec], datasets: Mapping[str, DatasetSpec]
) -> Audit:
    """Count the requested subjects' rows in every retained snapshot (any branch or tag) of every table that
    can hold them. A hit is due for purge by the latest clean of its table after the snapshot (or, never
    cleaned, the subject's request) plus `purge_within()`."""
    result = Audit()
    key = erasure_key()
    bound = purge_within()
    if not table_exists(spark, requests_table(spark)):
        return result
    requested_at = _requested_at(spark)
    clean_times = _clean_times(spark)
    for stream in streams_in_scope(streams, ALL_STREAMS):
        requests = requests_for(spark, stream.name, key=key)
        tables, aggregated = held_tables(spark, stream, datasets.values())
        result.rederived += [spec.name for spec in aggregated if spec.name not in result.rederived]
        if not requests:
            continue
        for table in tables:
            result.tables.append(table.identifier)
            if table.kind != "quarantine" and table.column not in top_level_columns(spark, table.identifier):
                continue
            for snapshot in iceberg_table(spark, table.identifier).snapshots():
                snapshot_id = int(snapshot.snapshotId())
                committed = datetime.fromtimestamp(snapshot.timestampMillis() / 1000, UTC)
                rows = subject_rows(read_at(spark, table.identifier, snapshot_id), table, requests, key)
                column = (
                    _quarantine_subject(table.column) if table.kind == "quarantine" else F.col(table.column)
                )
                hashed = rows.select(subject_hash(column.cast("string"), key).alias("h")).groupBy("h").count()
                found = {r["h"]: r["count"] for r in hashed.collect()}
                result.snapshots_read += 1
                if not found:
                    continue
                cleaned = [t for t in clean_times.get(table.identifier, []) if t >= committed]
                start = min(cleaned) if cleaned else max(requested_at.get(h, committed) for h in found)
                result.hits.append(
                    Hit(table.identifier, snapshot_id, committed, sum(found.values()), start + bound)
                )
    return result


def _clean_times(spark: SparkSession) -> dict[str, list[datetime]]:
    cleans = _cleans(spark)
    out: dict[str, list[datetime]] = {}
    if cleans is None:
        return out
    for row in cleans.where(F.col("snapshot_id").isNotNull()).collect():
        out.setdefault(row["table_name"], []).append(row["cleaned_at"].replace(tzinfo=UTC))
    return out
