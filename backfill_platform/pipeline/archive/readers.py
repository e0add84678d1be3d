"""Reading archive files into Spark: one row per record, streamed on the executors as Arrow batches.

The files of a window are spread over Spark tasks; each task reads its files with `archive.records.
iter_records` (local paths, or `s3://` objects fetched by the task itself) and hands its records to
Spark in bounded Arrow batches, so memory does not depend on a file's size.
"""

from __future__ import annotations

import functools

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from backfill_platform.pipeline.archive.jvm_lines import (
    jvm_readable,
    plain_files,
    read_plain_lines,
    task_count,
)
from backfill_platform.pipeline.archive.kafka_connect import kafka_file
from backfill_platform.pipeline.archive.line_blocks import plain_line_blocks
from backfill_platform.pipeline.archive.listing import ArchiveFile
from backfill_platform.pipeline.archive.records import JSON_LINES, RecordFormat, iter_records
from backfill_platform.specs.archive_location import KafkaConnectSpec

LINES_SCHEMA = (
    "_source_file string, _line_number bigint, _ingestion_time timestamp, line string, _raw binary, "
    "_defect string, _defect_detail string, _kafka_partition int, _kafka_offset bigint"
)
_READ_SCHEMA = (
    "_file int, _line_number bigint, line string, _raw binary, _defect string, _defect_detail string"
)
_BATCH_ROWS = 4096
_BATCH_BYTES = 16 << 20


def read_lines(
    spark: SparkSession,
    files: list[ArchiveFile],
    fmt: RecordFormat = JSON_LINES,
    kafka: KafkaConnectSpec | None = None,
    jvm: bool = True,
) -> DataFrame:
    """One row per record of each file, with the file's name, the 1-based record number (`_line_number`:
    the line of a `jsonl` file, the object or row of other formats) and the ingestion hour.

    Files are streamed record by record on the executors (`archive.records.iter_records`), local files by path
    and `s3://` objects fetched by the tasks themselves with boto3 (`archive.s3`); memory is bounded by
    `max_line_bytes` and a batch, whatever the file size; compression is recognised by content (a gzip
    file named `.jsonl` or a plain one named `.gz` are both read); a truncated or corrupt gzip file
    yields its intact lines and one `unreadable_file` record instead of failing the run; a line that is
    not UTF-8 is kept with its exact bytes (`_raw`) instead of being altered. `_defect` names what the
    reader found wrong with a line (its quarantine reason), or is null. With `kafka`, the files are Kafka
    Connect's (`archive.kafka_connect`): each record gets its Kafka partition, and its offset unless the
    topic's offsets have gaps (then a record's position in its file does not tell its offset).

    Plain local JSON-lines files are read in the JVM instead, to the same rows (`archive.jvm_lines`; `jvm`
    False reads every file in Python, as the tests' comparison does).
    """
    if not files:
        return spark.createDataFrame([], LINES_SCHEMA)
    names = {i: kafka_file(f.name) for i, f in enumerate(files)} if kafka is not None else {}
    manifest = spark.createDataFrame(
        [
            (
                i,
                f.name,
                f.ingestion_hour,
                *((k.partition, k.start_offset) if (k := names.get(i)) else (None, None)),
            )
            for i, f in enumerate(files)
        ],
        "_file int, _source_file string, _ingestion_time timestamp, _kafka_partition int, _kafka_start bigint",
    )
    lines = _read(spark, files, fmt, jvm)
    # A Kafka Connect file holds its partition's records contiguously from its start offset on, unless
    # the topic is compacted or transactional.
    contiguous = kafka is not None and not kafka.offsets_have_gaps
    offset = (F.col("_kafka_start") + F.col("_line_number") - 1) if contiguous else F.lit(None).cast("bigint")
    offset = offset.alias("_kafka_offset")
    return lines.join(F.broadcast(manifest), "_file").select(*schema_names(LINES_SCHEMA)[:-1], offset)


def _read(spark: SparkSession, files: list[ArchiveFile], fmt: RecordFormat, jvm: bool) -> DataFrame:
    """`_READ_SCHEMA` rows of every file: the plain ones from the JVM, the others from the Python reader."""
    candidates = {
        i: f.path
        for i, f in enumerate(files)
        if jvm and fmt.name == "jsonl" and jvm_readable(f.path, f.reader is not None)
    }
    verdicts = plain_files(spark, list(candidates.values()), fmt.max_record_bytes)
    plain = {i: path for (i, path), why in zip(candidates.items(), verdicts, strict=True) if why is None}
    parts = []
    if plain:
        parts.append(
            read_plain_lines(spark, plain, fmt.max_record_bytes).select(
                "*",
                F.lit(None).cast("binary").alias("_raw"),
                F.lit(None).cast("string").alias("_defect"),
                F.lit(None).cast("string").alias("_defect_detail"),
            )
        )
    rest = [(i, f.path) for i, f in enumerate(files) if i not in plain]
    if rest:
        paths = spark.sparkContext.parallelize(rest, task_count(spark, len(rest)))
        readers = {i: f.reader for i, f in enumerate(files) if f.reader is not None}
        parts.append(
            paths.toDF("_file int, _path string").mapInArrow(_arrow_reader(fmt, readers), _READ_SCHEMA)
        )
    return functools.reduce(DataFrame.unionByName, parts)


def _arrow_reader(fmt: RecordFormat, readers: dict | None = None):
    readers = readers or {}

    def read(batches):
        for batch in batches:
            for index, path in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True):
                yield from _file_batches(index, path, fmt, readers.get(index))

    return read


def _file_batches(index: int, path: str, fmt: RecordFormat, reader=None):
    import pyarrow as pa

    if fmt.name == "jsonl":
        records = _plain_blocks_first(pa, index, path, fmt, reader)
    else:
        records = iter_records(path, fmt, reader)
    columns: list[list] = [[], [], [], [], []]
    size = 0
    for record in records:
        if isinstance(record, pa.RecordBatch):
            yield record
            continue
        for column, value in zip(columns, record, strict=True):
            column.append(value)
        size += len(record[1]) + len(record[2] or b"")
        if len(columns[0]) >= _BATCH_ROWS or size >= _BATCH_BYTES:
            yield _batch(pa, index, columns)
            columns, size = [[], [], [], [], []], 0
    if columns[0]:
        yield _batch(pa, index, columns)


def _plain_blocks_first(pa, index: int, path: str, fmt: RecordFormat, reader=None):
    """A JSON-lines file's plain blocks as ready batches (`archive.line_blocks`), then its records."""
    import numpy as np

    for item in plain_line_blocks(path, fmt.max_record_bytes, reader):
        if isinstance(item[1], str):  # a record: `iter_lines` took over
            yield item
            continue
        first, lines = item
        rows = len(lines)
        yield pa.RecordBatch.from_arrays(
            [
                pa.array(np.full(rows, index, np.int32)),
                pa.array(np.arange(first, first + rows, dtype=np.int64)),
                lines,
                pa.nulls(rows, pa.binary()),
                pa.nulls(rows, pa.string()),
                pa.nulls(rows, pa.string()),
            ],
            names=schema_names(_READ_SCHEMA),
        )


def _batch(pa, index: int, columns: list[list]):
    numbers, text, raw, defect, detail = columns
    return pa.RecordBatch.from_arrays(
        [
            pa.array([index] * len(numbers), pa.int32()),
            pa.array(numbers, pa.int64()),
            pa.array(text, pa.string()),
            pa.array(raw, pa.binary()),
            pa.array(defect, pa.string()),
            pa.array(detail, pa.string()),
        ],
        names=schema_names(_READ_SCHEMA),
    )


def schema_names(ddl: str) -> list[str]:
    return [part.strip().split(" ")[0] for part in ddl.split(",")]
