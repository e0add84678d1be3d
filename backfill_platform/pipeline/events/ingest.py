"""Ingest one event-time window: read the archive hours that can hold it, write events and quarantine.

The window [start, end) reads the ingestion hours of its read window (the run's `hour_mapping.ReadPlan`),
which cover every line attributed to it (see `parse`). Events and quarantine are each replaced for exactly
the window in one Iceberg commit, so re-running a window is idempotent.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from backfill_platform.faults import EVENTS_BEFORE_QUARANTINE, failpoint
from backfill_platform.lakehouse.tables import ensure_table, replace_range
from backfill_platform.pipeline.archive.iceberg_reader import read_table_lines
from backfill_platform.pipeline.archive.listing import Archive, ArchiveFile, UnlistedFile, list_files
from backfill_platform.pipeline.archive.readers import read_lines
from backfill_platform.pipeline.archive.records import RecordFormat
from backfill_platform.pipeline.erasure.requests import NO_REQUESTS, Requests
from backfill_platform.pipeline.erasure.subjects import mark_erased
from backfill_platform.pipeline.events.classify import classify_window
from backfill_platform.pipeline.events.completeness import proves_by_offsets, topic_edges_lookup
from backfill_platform.pipeline.events.parse import REASONS, parse_records
from backfill_platform.pipeline.events.sequences import sequence_gaps
from backfill_platform.pipeline.events.table_offsets import table_offset_gaps
from backfill_platform.pipeline.hour_mapping import ReadPlan, ReadWindow
from backfill_platform.pipeline.names import events_table, quarantine_table
from backfill_platform.pipeline.partitions import partition_of
from backfill_platform.specs.grain import value_key
from backfill_platform.specs.stream import StreamSpec, events_columns


@dataclass
class PartitionFigures:
    """The accounting of one event-time partition: records = written + duplicates + quarantined + erased."""

    partition: str
    archive_files: int = 0
    records: int = 0
    written: int = 0
    duplicates: int = 0
    conflicting_ids: int = 0
    late: int = 0
    # Admissible records of subjects with an erasure request (`pipeline/erasure/`): dropped before the copies
    # of an id are compared, written nowhere. Such a subject's quarantined records are counted as
    # quarantined: the quarantine keeps their file, line and reason, never their text.
    erased: int = 0
    quarantined: dict[str, int] = field(default_factory=lambda: dict.fromkeys(REASONS, 0))
    # One quarantined record per reason, as `file:line: detail | line`, for the checks' metadata.
    samples: dict[str, str] = field(default_factory=dict)

    @property
    def quarantined_total(self) -> int:
        return sum(self.quarantined.values())


@dataclass
class IngestResult:
    files: list[ArchiveFile]
    partitions: dict[str, PartitionFigures]
    seconds: float
    events_snapshot_id: int | None
    quarantine_snapshot_id: int | None
    # Files below the archive root that no window ever reads (outside the hour layout, hidden, or in an
    # hour before the stream's first read window), with their line counts: reported, not dropped.
    unlisted: list[UnlistedFile] = field(default_factory=list)
    # Records read per file (name), where completeness is proven by Kafka offsets; else empty.
    file_records: dict[str, int] = field(default_factory=dict)
    # Per day, the producers' missing sequence ranges (`sequence`) and a table archive's missing Kafka
    # offsets (`kafka_metadata`); else empty.
    sequence_gaps: dict[str, list[str]] = field(default_factory=dict)
    # Per day, what proved a table archive's offsets (`table_offsets`): inside the rows, or at the edges too.
    offset_proofs: dict[str, str] = field(default_factory=dict)
    # The erasure requests the run honored (their table's snapshot).
    erasure: Requests = NO_REQUESTS

    @property
    def bytes(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def records(self) -> int:
        return sum(p.records for p in self.partitions.values())

    @property
    def events_per_second(self) -> float:
        return self.records / self.seconds if self.seconds else 0.0


# The detail of a quarantined record of a subject with an erasure request: its text is withheld.
ERASED_DETAIL = "subject has an erasure request: text withheld"

QUARANTINE_COLUMNS = [
    ("line", "string"),
    ("_source_file", "string"),
    ("_line_number", "bigint"),
    ("reason", "string"),
    ("detail", "string"),
    ("_ingestion_time", "timestamp"),
    ("attributed_time", "timestamp"),
    ("event_id", "string"),
    ("event_time", "timestamp"),
    ("_schema_version", "int"),
    ("raw_bytes", "binary"),  # the line's exact bytes when they are not UTF-8 (`line` escapes them)
]


def ensure_stream_tables(spark: SparkSession, spec: StreamSpec) -> None:
    """Create the events and quarantine tables, or add the columns they lack: a field of a new schema
    version (events), a column of a newer platform (quarantine). Rows written before read null for it."""
    transform = spec.grain.iceberg_transform
    ensure_table(spark, events_table(spark, spec), events_columns(spec), f"{transform}(event_time)")
    ensure_table(spark, quarantine_table(spark, spec), QUARANTINE_COLUMNS, f"{transform}(attributed_time)")


def ingest_window(
    spark: SparkSession,
    spec: StreamSpec,
    archive: Archive,
    plan: ReadPlan,
    properties: dict[str, str] | None = None,
    files: list[ArchiveFile] | None = None,
    erasure: Requests = NO_REQUESTS,
) -> IngestResult:
    """Re-derive the events and quarantine of the partitions of `plan` (the run's read windows,
    `ReadPlan.for_range`) from the archive; return the figures.

    `files`: the window's listing (`window_files`) when the caller already made it. `erasure`: the
    requests to honor: their subjects' admissible records are counted as erased and written nowhere, their
    quarantined ones keep file, line and reason without any text."""
    began = time.monotonic()
    start, end = plan.start, plan.end
    files = window_files(archive, plan.window) if files is None else files
    # The tables' DDL is the run's first catalog call (over a second in a fresh JVM): it runs while the
    # main pass is planned and computed, and the writes wait for it.
    ddl = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ensure-stream-tables")
    tables_ready = ddl.submit(ensure_stream_tables, spark, spec)
    records = classified = None
    try:
        records = mark_erased(parse_records(_archive_lines(spark, spec, files), spec), spec, erasure)
        by_offsets = proves_by_offsets(spec)
        if by_offsets or spec.sequence:
            # Offsets and sequences count every record read, also those attributed outside the window:
            # cached, so that the files are read once.
            records = records.persist(StorageLevel.MEMORY_AND_DISK)
        # Cached: the figures, the events and the quarantine are three reads of it. Only quarantined
        # records keep their raw line there (the events never read it, the figures one sample per reason
        # and day): the cache of a big day is then about half the size.
        quarantined = F.col("_reason").isNotNull() & ~F.col("_erased")  # whose text the quarantine keeps
        with classify_settings(spark, sum(f.size for f in files)):
            classified = (
                classify_window(records, spec, plan)
                .withColumn("line", F.when(quarantined, F.col("line")))
                .withColumn("_raw", F.when(quarantined, F.col("_raw")))
                .persist(StorageLevel.MEMORY_AND_DISK)
            )
            partitions = _figures(classified, spec, start, end)  # builds the cache
        file_records, gaps, offset_proofs = _completeness_evidence(spark, spec, records, plan)
        # `classified` is computed and cached now; its input need not hold memory any longer.
        records.unpersist()
        tables_ready.result()
        events = classified.where(F.col("_kept")).select(*(name for name, _ in events_columns(spec)))
        events_snapshot = replace_range(
            events,
            events_table(spark, spec),
            "event_time",
            start,
            end,
            properties,
            _events_write_options(partitions),
        )
        failpoint(EVENTS_BEFORE_QUARANTINE)
        quarantine_snapshot = replace_range(
            _quarantine_rows(classified),
            quarantine_table(spark, spec),
            "attributed_time",
            start,
            end,
            properties,
        )
        _count_files_per_day(plan, files, partitions)
    finally:
        ddl.shutdown(wait=True)
        for cached in (classified, records):
            if cached is not None:
                cached.unpersist()
    return IngestResult(
        files=files,
        partitions=partitions,
        seconds=time.monotonic() - began,
        events_snapshot_id=events_snapshot,
        quarantine_snapshot_id=quarantine_snapshot,
        unlisted=unlisted_files(spec, archive, plan),
        file_records=file_records,
        sequence_gaps=gaps,
        offset_proofs=offset_proofs,
        erasure=erasure,
    )


def _archive_lines(spark: SparkSession, spec: StreamSpec, files: list[ArchiveFile]) -> DataFrame:
    """The window's archive records as lines (a table archive's rows, or the files' lines)."""
    if spec.archive.iceberg_table is not None:
        return read_table_lines(spark, spec.archive, files)
    return read_lines(spark, files, RecordFormat.of(spec.archive), spec.archive.kafka_connect)


def _completeness_evidence(
    spark: SparkSession, spec: StreamSpec, records: DataFrame, plan: ReadPlan
) -> tuple[dict, dict[str, list], dict[str, str]]:
    """What proves the window's days whole beyond the hours: records per file (Kafka Connect offsets),
    holes in producers' sequence numbers and in a table archive's offsets, and each day's offset proof."""
    by_offsets = proves_by_offsets(spec)
    file_records = _records_per_file(records) if by_offsets and spec.archive.kafka_connect else {}
    gaps = sequence_gaps(spark, records, spec, plan) if spec.sequence else {}
    offset_proofs: dict[str, str] = {}
    if by_offsets and spec.archive.kafka_metadata is not None:
        table_offsets = table_offset_gaps(records, spec, plan, topic_edges_lookup(spec))
        for day, problems in table_offsets.gaps.items():
            gaps.setdefault(day, []).extend(problems)
        offset_proofs = table_offsets.proofs
    return file_records, gaps, offset_proofs


def _quarantine_rows(classified: DataFrame) -> DataFrame:
    """The quarantine table's rows: each record that was not kept, with its line, position and reason. Of a
    subject with an erasure request, only where and why: no line, detail, id or bytes (the line was already
    withheld from the cache, `ingest_window`)."""
    erased = F.col("_erased")
    return classified.where(F.col("_reason").isNotNull()).select(
        "line",
        "_source_file",
        "_line_number",
        F.col("_reason").alias("reason"),
        F.when(erased, F.lit(ERASED_DETAIL)).otherwise(F.col("_detail")).alias("detail"),
        "_ingestion_time",
        F.col("_attributed_time").alias("attributed_time"),
        F.when((F.col("event_id") != "") & ~erased, F.col("event_id")).alias("event_id"),
        "event_time",
        "_schema_version",
        F.col("_raw").alias("raw_bytes"),
    )


def _count_files_per_day(plan: ReadPlan, files: list[ArchiveFile], partitions: dict) -> None:
    """Each day's `archive_files`: the files of its read window. Windows of neighbouring days overlap, so
    per-day counts do not add up to the run's. Files are listed hour by hour: their hours are sorted, and
    a day's window is a slice of them."""
    listed_hours = [f.ingestion_hour for f in files]
    for day, figures in partitions.items():
        window = plan.partitions[day]
        figures.archive_files = bisect_left(listed_hours, window.high) - bisect_left(listed_hours, window.low)


def window_files(archive: Archive, window: ReadWindow) -> list[ArchiveFile]:
    """The archive files an ingestion reads: those of the hours of its read window."""
    return list_files(archive, window.low, window.high)


# Below this many events a write is about a second in one task: a range's sampling job (and its sort,
# compiled cold in a short run) would cost about what a second task saves.
RANGE_WRITE_FROM_EVENTS = 500_000


def _events_write_options(partitions: Mapping[str, PartitionFigures]) -> dict[str, str]:
    """A big write of several days is distributed by range, not by Iceberg's default hash.

    Iceberg hashes each day to one of `spark.sql.shuffle.partitions` (8) shuffle partitions, and
    neighbouring days often share one (2026-10-01 and 10-02 do): one task then wrote both while the other
    cores waited. A range gives each task whole days, split by their sampled sizes, at the price of a
    sampling job over the cached records (docs/performance.md, "What changed"). Only when
    the days besides the biggest hold enough events for a second task to matter; and only here: the
    sampling reads the write's input once more, cheap for the cached records, not for a dataset's transform.
    """
    written = [figures.written for figures in partitions.values()]
    total = sum(written)
    besides_biggest = total - max(written, default=0)
    spread = total >= RANGE_WRITE_FROM_EVENTS and besides_biggest >= RANGE_WRITE_FROM_EVENTS // 2
    return {"distribution-mode": "range"} if spread else {}


# The comparison of each id's copies shuffles a window's records (5 to 6 bytes of shuffle for each byte of
# gzip archive read) and sorts each partition. A local task's sort spills once its partition holds more
# than about 16 MiB of archive: 2 days x 15M events (1.2 GiB of archive) in the session's 8 partitions
# spilled 22 GiB, in 46 still 14 GiB; in 138 (8 MiB each) nothing, and the comparison's job took 122 s
# instead of 161-169 s (docs/performance.md, "How cost grows").
SPILLS_FROM_ARCHIVE_BYTES = 16 * 2**20
ARCHIVE_BYTES_PER_SHUFFLE_PARTITION = 8 * 2**20
MAX_SHUFFLE_PARTITIONS = 2000


def classify_shuffle_partitions(configured: int, read_bytes: int) -> int:
    """The classification's shuffle partitions for `read_bytes` of archive: the session's own setting
    (`configured`, its `spark.sql.shuffle.partitions`) while its partitions' sort fits in memory, else
    one partition for each `ARCHIVE_BYTES_PER_SHUFFLE_PARTITION` read. Reads up to the big day's keep
    the session's setting: there, more tasks only cost their overhead."""
    if read_bytes <= configured * SPILLS_FROM_ARCHIVE_BYTES:
        return configured
    return min(-(-read_bytes // ARCHIVE_BYTES_PER_SHUFFLE_PARTITION), MAX_SHUFFLE_PARTITIONS)


@contextmanager
def classify_settings(spark: SparkSession, read_bytes: int) -> Iterator[None]:
    """The session's settings while the classified records are planned and cached, restored after.

    - No columnar compression of the cache: it is read three times and dropped at the end of the run,
      and encoding it cost more than it saved (2 days x 1.5M events, warm: classify and cache 39.7-42.1 s
      compressed, 31.1 s not, 28.6 s uncached).
    - Shuffle partitions by the bytes read (`classify_shuffle_partitions`), so that the comparison's sort
      does not spill on a big read. Neither changes a row or a figure: only how the work is cut."""
    settings = {
        "spark.sql.inMemoryColumnarStorage.compressed": "false",
        "spark.sql.shuffle.partitions": str(
            classify_shuffle_partitions(
                int(spark.conf.get("spark.sql.shuffle.partitions", "200")), read_bytes
            )
        ),
    }
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def _records_per_file(records: DataFrame) -> dict[str, int]:
    """Records read per file, the damage record of a file that could not be read to its end excepted:
    what the file holds of its Kafka offsets (a damaged file thus shows as missing offsets after it)."""
    rows = (
        records.where(F.coalesce(F.col("_reason") != "unreadable_file", F.lit(True)))
        .groupBy("_source_file")
        .count()
        .collect()
    )
    return {row["_source_file"]: row["count"] for row in rows}


def unlisted_files(spec: StreamSpec, archive: Archive, plan: ReadPlan) -> list[UnlistedFile]:
    """What the archive holds that no window of the stream reads."""
    return archive.unlisted_files(plan.stream_first_hour, RecordFormat.of(spec.archive))


def _figures(
    classified: DataFrame, spec: StreamSpec, start: datetime, end: datetime
) -> dict[str, PartitionFigures]:
    grain = spec.grain
    partition = partition_of(grain, "_attributed_time")
    reason = F.col("_reason")
    erased = F.col("_erased") & reason.isNull()  # a requested subject's quarantined record is quarantined
    kept = F.col("_kept")
    rows = (
        classified.groupBy(partition.alias("day"))
        .agg(
            F.count(F.lit(1)).alias("records"),
            F.count(F.when(kept, 1)).alias("written"),
            F.count(F.when(reason.isNull() & ~kept & ~erased, 1)).alias("duplicates"),
            F.count(F.when(erased, 1)).alias("erased"),
            F.countDistinct(F.when(reason == "conflicting_duplicate", F.col("event_id"))).alias(
                "conflicting_ids"
            ),
            F.count(F.when(kept & (F.col("_ingestion_time") > F.date_trunc("hour", "event_time")), 1)).alias(
                "late"
            ),
            *(F.count(F.when(reason == r, 1)).alias(r) for r in REASONS),
        )
        .collect()
    )
    figures = {key: PartitionFigures(key) for key in grain.keys_between(start, end)}
    for row in rows:
        key = value_key(row["day"])
        figures[key] = PartitionFigures(
            partition=key,
            records=row["records"],
            written=row["written"],
            duplicates=row["duplicates"],
            conflicting_ids=row["conflicting_ids"],
            late=row["late"],
            erased=row["erased"],
            quarantined={r: row[r] for r in REASONS},
        )
    # Apart, over the quarantined records only: a string `min` makes Spark sort its input by the grouping
    # key (no hash aggregation of strings), which over every record of a big day costs seconds.
    samples = (
        classified.where(reason.isNotNull())
        .groupBy(partition.alias("day"), reason.alias("reason"))
        .agg(F.min(_sample()).alias("sample"))
        .collect()
    )
    for row in samples:
        figures[value_key(row["day"])].samples[row["reason"]] = row["sample"]
    return figures


SAMPLE_CHARACTERS = 300


def _sample() -> Column:
    """A quarantined record as the checks show it: where it is, why, and the start of its line (the
    earliest file and line of its reason, so that a re-run shows the same one)."""
    return F.format_string(
        "%s:%09d: %s | %s",
        F.col("_source_file"),
        F.col("_line_number"),
        F.coalesce(F.when(F.col("_erased"), F.lit(ERASED_DETAIL)), F.col("_detail"), F.lit("")),
        F.substring(F.coalesce(F.col("line"), F.lit("")), 1, SAMPLE_CHARACTERS),
    )
