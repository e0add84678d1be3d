"""Turn archived JSON lines into classified records, as one lazy Spark plan.

Every line read is classified exactly once: an admissible event (kept or duplicate) or a quarantined
record with a reason. Each line is attributed to one event-time partition — its event time when it is
admissible, otherwise its ingestion hour — so that every record of every archive file is counted once,
in exactly one partition's figures, whichever windows happen to read it.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType, TimestampType

from backfill_platform.lakehouse.tables import in_range
from backfill_platform.pipeline.archive.listing import ArchiveFile, iter_lines
from backfill_platform.pipeline.hour_mapping import read_after, read_before
from backfill_platform.specs.common import FIELD_TYPES
from backfill_platform.specs.durations import DAY, HOUR, midnight
from backfill_platform.specs.stream import SchemaVersion, StreamSpec

CORRUPT = "_corrupt_record"
# Checked in this order; the first that applies is the record's reason. The first three are found while
# reading the file (see `archive.listing.iter_lines`), the last one while deduplicating.
REASONS = (
    "unreadable_file",
    "line_too_long",
    "invalid_utf8",
    "malformed_json",
    "multiple_json_values",
    "unknown_schema_version",
    "missing_event_id",
    "unparseable_event_time",
    "invalid_field",
    "too_late",
    "clock_skew",
    "before_first_partition",
    "conflicting_duplicate",
)
METADATA_COLUMNS = ("_schema_version", "_source_file", "_line_number", "_ingestion_time")
LINES_SCHEMA = (
    "_source_file string, _line_number bigint, _ingestion_time timestamp, line string, _raw binary, "
    "_defect string, _defect_detail string"
)
_READ_SCHEMA = (
    "_file int, _line_number bigint, line string, _raw binary, _defect string, _defect_detail string"
)
# An ISO 8601 date *and* time (a date alone, or a bare year, is not an event time), optional offset.
_ISO_DATETIME = r"^\s*\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}(:?\d{2})?)?\s*$"
# Epoch milliseconds: an integer of at most 15 digits (year < 33658), so that no conversion overflows.
_EPOCH_MILLIS = r"^\s*-?\d{1,15}\s*$"
_INTEGER = r"^\s*[+-]?\d+\s*$"
_DATE = r"^\s*\d{4}-\d{2}-\d{2}\s*$"
_BATCH_ROWS = 4096
_BATCH_BYTES = 16 << 20


def read_lines(spark: SparkSession, files: list[ArchiveFile], max_line_bytes: int = 1 << 20) -> DataFrame:
    """One row per line of each file, with the file's name, the 1-based line number and ingestion hour.

    Files are streamed line by line on the executors (`archive.listing.iter_lines`), local files by path
    and `s3://` objects fetched by the tasks themselves with boto3 (`archive.s3`); memory is bounded by
    `max_line_bytes` and a batch, whatever the file size; compression is recognised by content (a gzip
    file named `.jsonl` or a plain one named `.gz` are both read); a truncated or corrupt gzip file
    yields its intact lines and one `unreadable_file` record instead of failing the run; a line that is
    not UTF-8 is kept with its exact bytes (`_raw`) instead of being altered. `_defect` names what the
    reader found wrong with a line (its quarantine reason), or is null.
    """
    if not files:
        return spark.createDataFrame([], LINES_SCHEMA)
    manifest = spark.createDataFrame(
        [(i, f.name, f.ingestion_hour) for i, f in enumerate(files)],
        "_file int, _source_file string, _ingestion_time timestamp",
    )
    paths = spark.sparkContext.parallelize(
        [(i, f.path) for i, f in enumerate(files)], min(len(files), 4 * spark.sparkContext.defaultParallelism)
    ).toDF("_file int, _path string")
    readers = {i: f.reader for i, f in enumerate(files) if f.reader is not None}
    lines = paths.mapInArrow(_arrow_reader(max_line_bytes, readers), _READ_SCHEMA)
    return lines.join(F.broadcast(manifest), "_file").select(*schema_names(LINES_SCHEMA))


def _arrow_reader(max_line_bytes: int, readers: dict | None = None):
    readers = readers or {}

    def read(batches):
        for batch in batches:
            for index, path in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True):
                yield from _file_batches(index, path, max_line_bytes, readers.get(index))

    return read


def _file_batches(index: int, path: str, max_line_bytes: int, reader=None):
    import pyarrow as pa

    columns: list[list] = [[], [], [], [], []]
    size = 0
    for record in iter_lines(path, max_line_bytes, reader):
        for column, value in zip(columns, record, strict=True):
            column.append(value)
        size += len(record[1]) + len(record[2] or b"")
        if len(columns[0]) >= _BATCH_ROWS or size >= _BATCH_BYTES:
            yield _batch(pa, index, columns)
            columns, size = [[], [], [], [], []], 0
    if columns[0]:
        yield _batch(pa, index, columns)


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


def _raw_schema(spec: StreamSpec) -> StructType:
    # Every field is read as text: typing happens per version, so a bad value becomes a reason, not a null.
    fields = [StructField(name, StringType()) for name in spec.source_fields()]
    return StructType([*fields, StructField(CORRUPT, StringType())])


def _raw(name: str) -> Column:
    return F.col("_r").getField(name)


def _matches(version: SchemaVersion) -> Column:
    value = _raw(version.match.field)
    return value.isNull() if version.match.missing else value == F.lit(str(version.match.equals))


def _event_time(spec: StreamSpec, version: SchemaVersion) -> Column:
    text = _raw(spec.event_time.field)
    if spec.time_format(version) == "epoch_millis":
        return F.when(text.rlike(_EPOCH_MILLIS), F.timestamp_millis(F.trim(text).cast("long")))
    return F.when(text.rlike(_ISO_DATETIME), F.trim(text).cast(TimestampType()))


def _typed(text: Column, kind: str) -> Column:
    """`text` as a value of `kind`, or null when it is not exactly such a value.

    Spark's casts are lenient where a record must not be altered: `42.7` casts to the long 42, `1e400`
    to an infinite double, `yes` to true and a date to its midnight. Those are invalid values here.
    """
    value = text.cast(FIELD_TYPES[kind])
    if kind in ("long", "int"):
        return F.when(text.rlike(_INTEGER), value)
    if kind == "double":
        return F.when(~F.isnan(value) & (F.abs(value) != F.lit(float("inf"))), value)
    if kind == "boolean":
        return F.when(F.lower(F.trim(text)).isin("true", "false"), value)
    if kind == "date":
        return F.when(text.rlike(_DATE), value)
    if kind == "timestamp":
        return F.when(text.rlike(_ISO_DATETIME), value)
    return value


def _upcast(version: SchemaVersion, latest: dict[str, str]) -> tuple[dict[str, Column], Column]:
    """The version's payload as latest-schema columns, and the name of its first ill-typed field."""
    columns = {name: _typed(_raw(name), kind) for name, kind in version.fields.items()}
    types = dict(version.fields)
    invalid = [
        F.when(_raw(name).isNotNull() & columns[name].isNull(), F.lit(name))
        for name, kind in version.fields.items()
        if kind != "string"
    ]
    for step in version.upcast:
        if step.rename is not None:
            columns[step.rename["to"]] = columns.pop(step.rename["from"])
            types[step.rename["to"]] = types.pop(step.rename["from"])
        elif step.default is not None:
            name = step.default["field"]
            columns[name] = F.lit(step.default["value"]).cast(FIELD_TYPES[latest[name]])
            types[name] = latest[name]
        elif step.cast is not None:
            name, before = step.cast["field"], columns[step.cast["field"]]
            after = before.cast(FIELD_TYPES[step.cast["type"]])
            # A value the upcast loses (unparseable, overflowed, truncated) is as invalid as a mistyped
            # one: it must round-trip to what the record said.
            lossy = after.isNull() | (after.cast(FIELD_TYPES[types[name]]) != before)
            invalid.append(F.when(before.isNotNull() & lossy, F.lit(name)))
            columns[name], types[name] = after, step.cast["type"]
        elif step.drop is not None:
            del columns[step.drop]
            del types[step.drop]
    return columns, F.coalesce(*invalid, F.lit(None).cast("string"))


def _by_version(spec: StreamSpec, pick: dict[int, Column]) -> Column:
    expression = None
    for version in spec.schema_versions:
        branch = F.col("_schema_version") == version.version
        expression = (
            F.when(branch, pick[version.version])
            if expression is None
            else expression.when(branch, pick[version.version])
        )
    return expression


def _micros(value: timedelta) -> int:
    return value // timedelta(microseconds=1)


def _one_object(line: Column) -> Column:
    """Whether `line` is exactly one JSON object, with nothing but whitespace around it.

    Spark's `from_json` parses the first value of a line and ignores whatever follows it: of
    `{"id":"a"}{"id":"b"}` (Firehose without a record delimiter) it returns the first record and drops
    the second without a trace. Two strict parses by Jackson (the JVM's, so no Python per line) close
    that gap: `[line]` is an array of exactly one element only if nothing but `]` (or whitespace)
    follows the first value, and `{"k":line}` an object of exactly one key only if nothing but `}`
    does — together, only if nothing follows it at all. A line that fails either is not one record.
    """
    trimmed = F.trim(line)
    return F.coalesce(  # a failed strict parse is null: not one object
        trimmed.startswith("{")
        & trimmed.endswith("}")
        & ~line.contains("\u0000")
        & (F.json_array_length(F.concat(F.lit("["), line, F.lit("]"))) == 1)
        # Only a `]` can end the array early, so lines without one (most) skip the second parse.
        & (
            ~line.contains("]")
            | (F.size(F.json_object_keys(F.concat(F.lit('{"k":'), line, F.lit("}")))) == 1)
        ),
        F.lit(False),
    )


def _values_on_line(line: Column) -> Column:
    """How many JSON objects a line holds back to back (`{...}{...}`, whitespace allowed between), or null.

    Putting a comma between every `}` and `{` makes the line an array of its objects; inside a string the
    same replacement changes only that string's text, never the array's shape, since `}{` can appear
    nowhere else in valid JSON. Meant for lines `_one_object` refused: it says how many records they hold.
    """
    separated = F.regexp_replace(line, r"\}\s*\{", "},{")
    return F.json_array_length(F.concat(F.lit("["), separated, F.lit("]")))


def _malformed_detail(line: Column) -> Column:
    lenient_only = F.col("_r").isNotNull() & _raw(CORRUPT).isNull()  # Spark read an object, Jackson did not
    return F.when(line.contains("\u0000"), F.lit("NUL byte")).when(
        lenient_only, F.lit("text after the JSON object, or a non-standard value")
    )


def parse_records(lines: DataFrame, spec: StreamSpec) -> DataFrame:
    """Parse, recognise the schema version, upcast to the latest and give each record its reason (or null).

    A record is attributed to its event time when admissible, otherwise to its ingestion hour, and never
    before the stream's first partition: what would be attributed earlier (an admissible event of an
    earlier day, reason `before_first_partition`, or any record of an ingestion hour before it) is
    attributed to the first partition's start, so that it is counted there instead of nowhere.
    """
    parsed = lines.withColumn(
        "_r",
        F.from_json("line", _raw_schema(spec), {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT}),
    )
    version = None
    for candidate in reversed(spec.schema_versions):  # the newest matching rule wins
        rule = _matches(candidate)
        version = (
            F.when(rule, F.lit(candidate.version))
            if version is None
            else version.when(rule, candidate.version)
        )
    corrupt = F.col("_r").isNull() | _raw(CORRUPT).isNotNull() | ~_one_object(F.col("line"))
    parsed = parsed.withColumn("_schema_version", F.when(~corrupt, version).cast("int"))

    upcasts = {v.version: _upcast(v, spec.latest.fields) for v in spec.schema_versions}
    payload = {
        name: _by_version(spec, {n: cols[name] for n, (cols, _) in upcasts.items()}).alias(name)
        for name in spec.latest.fields
    }
    invalid_field = _by_version(spec, {n: bad for n, (_, bad) in upcasts.items()})
    event_time = _by_version(spec, {v.version: _event_time(spec, v) for v in spec.schema_versions})
    event_id = F.trim(_raw(spec.event_id_field))

    first = midnight(spec.first_partition)
    # Admissible in the ingestion hour [hb, hb + 1h): hb + 1h - read_after <= t < hb + read_before.
    earliest_us = _micros(HOUR - read_after(spec.allowed_lateness))
    ahead_us = _micros(read_before(spec.clock_skew))
    t_us, hb_us = F.unix_micros("event_time"), F.unix_micros("_ingestion_time")
    reason = (
        F.when(F.col("_defect").isNotNull(), F.col("_defect"))
        .when(corrupt & (_values_on_line(F.col("line")) > 1), "multiple_json_values")
        .when(corrupt, "malformed_json")
        .when(F.col("_schema_version").isNull(), "unknown_schema_version")
        .when(F.col("event_id").isNull() | (F.col("event_id") == ""), "missing_event_id")
        .when(F.col("event_time").isNull(), "unparseable_event_time")
        .when(F.col("_invalid_field").isNotNull(), "invalid_field")
        .when(t_us < hb_us + earliest_us, "too_late")
        .when(t_us >= hb_us + ahead_us, "clock_skew")
        .when(F.col("event_time") < F.lit(first), "before_first_partition")
    )
    reason_col = F.col("_reason")
    detail = (
        F.when(F.col("_defect").isNotNull(), F.col("_defect_detail"))
        .when(reason_col == "malformed_json", _malformed_detail(F.col("line")))
        .when(
            reason_col == "multiple_json_values",
            F.format_string(
                "%d JSON values on one line (records written without a delimiter)",
                _values_on_line(F.col("line")),
            ),
        )
        .when(reason_col == "unparseable_event_time", _raw(spec.event_time.field))
        .when(reason_col == "invalid_field", F.col("_invalid_field"))
        .when(
            reason_col.isin("too_late", "clock_skew", "before_first_partition"),
            F.col("event_time").cast("string"),
        )
    )
    return (
        parsed.select(
            "line",
            "_raw",
            "_defect",
            "_defect_detail",
            *METADATA_COLUMNS,
            event_id.alias("event_id"),
            event_time.alias("event_time"),
            invalid_field.alias("_invalid_field"),
            *payload.values(),
            "_r",
        )
        .withColumn("_reason", reason)
        .withColumn("_detail", detail)
        .withColumn(
            "_attributed_time",
            F.greatest(
                F.when(reason_col.isNull(), F.col("event_time")).otherwise(F.col("_ingestion_time")),
                F.lit(first),
            ),
        )
        .drop("_r", "_defect", "_defect_detail")
    )


def classify_window(records: DataFrame, spec: StreamSpec, start: datetime, end: datetime) -> DataFrame:
    """Keep the records attributed to [start, end) and decide which admissible copy of each event id is kept.

    `_kept` marks the one copy written to the events table. Copies of an id are compared within their
    event-time day (earliest ingestion, then file and line, wins) and across a midnight when both were
    ingested in the hours that every window touching that midnight reads (from `read_before` before it to
    `read_after` after it, `hour_mapping.read_window`): those hours are read by the runs of both days, so both
    decide alike whatever range a run covers, and an id redelivered with an event time on the other
    side of midnight still has one row. A copy that loses is a duplicate when its raw line equals the
    one that beat it, and is quarantined as `conflicting_duplicate` (naming the winner) otherwise, so
    the losing payload is kept. Quarantined copies of an id (e.g. a too-late redelivery) are not copies
    of the admissible event.
    """
    admissible = F.col("_reason").isNull()
    h_us = F.unix_micros("_ingestion_time")
    midnight_us = F.unix_micros(F.date_trunc("day", "_attributed_time"))
    day_us = _micros(DAY)
    before_us = _micros(read_before(spec.clock_skew))
    after_us = _micros(read_after(spec.allowed_lateness))

    def near(boundary: Column) -> Column:
        return F.when(admissible & (h_us >= boundary - before_us) & (h_us < boundary + after_us), boundary)

    keyed = (
        records.withColumn(
            "_key",
            F.when(
                admissible,
                F.struct(
                    h_us.alias("h"),
                    F.col("_source_file").alias("file"),
                    F.col("_line_number").alias("n"),
                    F.xxhash64("line").alias("hash"),
                ),
            ),
        )
        .withColumn("_b_start", near(midnight_us))
        .withColumn("_b_end", near(midnight_us + day_us))
    )
    # Ids with admissible copies on both sides of a midnight, within its shared hours (rare: small).
    ended = keyed.where(F.col("_b_end").isNotNull()).groupBy("event_id", F.col("_b_end").alias("_b"))
    started = keyed.where(F.col("_b_start").isNotNull()).groupBy("event_id", F.col("_b_start").alias("_b"))
    across = ended.agg(F.min("_key").alias("_earlier_day")).join(
        started.agg(F.min("_key").alias("_later_day")), ["event_id", "_b"]
    )
    by_day = Window.partitionBy("event_id", F.to_date("_attributed_time"), "_reason")
    compared = (
        # Broadcast: `across` is small, and joining it must not shuffle every record twice.
        keyed.join(
            F.broadcast(
                across.select(
                    "event_id", F.col("_b").alias("_b_start"), F.col("_earlier_day").alias("_rival_a")
                )
            ),
            ["event_id", "_b_start"],
            "left",
        )
        .join(
            F.broadcast(
                across.select("event_id", F.col("_b").alias("_b_end"), F.col("_later_day").alias("_rival_b"))
            ),
            ["event_id", "_b_end"],
            "left",
        )
        .withColumn("_winner", F.least(F.min("_key").over(by_day), "_rival_a", "_rival_b"))
        .withColumn("_kept", F.coalesce(admissible & (F.col("_key") == F.col("_winner")), F.lit(False)))
    )
    conflicting = admissible & ~F.col("_kept") & (F.col("_key.hash") != F.col("_winner.hash"))
    winner = F.concat(F.col("_winner.file"), F.lit(":"), F.col("_winner.n").cast("string"))
    return (
        compared.withColumn(
            "_detail", F.when(conflicting, F.concat(F.lit("kept "), winner)).otherwise(F.col("_detail"))
        )
        .withColumn(
            "_reason", F.when(conflicting, F.lit("conflicting_duplicate")).otherwise(F.col("_reason"))
        )
        .where(in_range("_attributed_time", start, end))
        .drop("_key", "_b_start", "_b_end", "_rival_a", "_rival_b", "_winner")
    )
