"""Turn archived JSON lines into classified records, as one lazy Spark plan.

Every line read is classified exactly once: an admissible event (kept or duplicate) or a quarantined
record with a reason. Each line is attributed to one event-time partition — its event time when it is
admissible, otherwise its ingestion hour — so that every record of every archive file is counted once,
in exactly one partition's figures, whichever windows happen to read it.
"""

from __future__ import annotations

from datetime import datetime

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType, TimestampType

from backfill_platform.archive.listing import HOUR, ArchiveFile
from backfill_platform.lakehouse.tables import in_range
from backfill_platform.specs.common import FIELD_TYPES
from backfill_platform.specs.stream import SchemaVersion, StreamSpec

CORRUPT = "_corrupt_record"
# Checked in this order; the first that applies is the record's reason.
REASONS = (
    "malformed_json",
    "unknown_schema_version",
    "missing_event_id",
    "unparseable_event_time",
    "invalid_field",
    "too_late",
    "clock_skew",
)
METADATA_COLUMNS = ("_schema_version", "_source_file", "_line_number", "_ingestion_time")


def read_lines(spark: SparkSession, files: list[ArchiveFile]) -> DataFrame:
    """One row per line of each file, with the file's name, the 1-based line number and ingestion hour.

    Files are read whole (`wholetext`) so line numbers are exact whatever the file size or compression.
    """
    schema = "_source_file string, _line_number bigint, _ingestion_time timestamp, line string"
    if not files:
        return spark.createDataFrame([], schema)
    manifest = spark.createDataFrame(
        [(spark_file_name(spark, f.path), f.name, f.ingestion_hour) for f in files],
        "_uri string, _source_file string, _ingestion_time timestamp",
    )
    whole = spark.read.text([f.path for f in files], wholetext=True)
    listed = {spark_file_name(spark, f.path) for f in files}
    unlisted = sorted(set(whole.inputFiles()) - listed)
    if unlisted:  # checked on the file index, before any data is read
        raise RuntimeError(f"Spark would read files the archive listing does not name: {unlisted[:3]}")
    lines = (
        whole.select(F.input_file_name().alias("_uri"), F.split("value", "\n").alias("_lines"))
        .select("_uri", F.size("_lines").alias("_n"), F.posexplode("_lines").alias("_pos", "line"))
        # A final newline leaves one empty string behind: it is not a record.
        .where(~((F.col("_pos") == F.col("_n") - 1) & (F.col("line") == "")))
        .select(
            "_uri",
            (F.col("_pos") + 1).alias("_line_number"),
            F.regexp_replace("line", "\r$", "").alias("line"),
        )
    )
    return lines.join(F.broadcast(manifest), "_uri").select(*schema_names(schema))


def spark_file_name(spark: SparkSession, path: str) -> str:
    """The name Spark's input_file_name() reports for `path` (Hadoop's qualified, escaped URI)."""
    hadoop_path = spark._jvm.org.apache.hadoop.fs.Path(path)
    filesystem = hadoop_path.getFileSystem(spark._jsc.hadoopConfiguration())
    return filesystem.makeQualified(hadoop_path).toUri().toString()


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
    text = F.trim(_raw(spec.event_time.field))
    if spec.time_format(version) == "epoch_millis":
        return F.timestamp_millis(text.cast("long"))
    return text.cast(TimestampType())


def _upcast(version: SchemaVersion, latest: dict[str, str]) -> tuple[dict[str, Column], Column]:
    """The version's payload as latest-schema columns, and the name of its first ill-typed field."""
    columns = {name: _raw(name).cast(FIELD_TYPES[kind]) for name, kind in version.fields.items()}
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


def parse_records(lines: DataFrame, spec: StreamSpec) -> DataFrame:
    """Parse, recognise the schema version, upcast to the latest and give each record its reason (or null)."""
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
    corrupt = F.col("_r").isNull() | _raw(CORRUPT).isNotNull()
    parsed = parsed.withColumn("_schema_version", F.when(~corrupt, version).cast("int"))

    upcasts = {v.version: _upcast(v, spec.latest.fields) for v in spec.schema_versions}
    payload = {
        name: _by_version(spec, {n: cols[name] for n, (cols, _) in upcasts.items()}).alias(name)
        for name in spec.latest.fields
    }
    invalid_field = _by_version(spec, {n: bad for n, (_, bad) in upcasts.items()})
    event_time = _by_version(spec, {v.version: _event_time(spec, v) for v in spec.schema_versions})
    event_id = F.trim(_raw(spec.event_id_field))

    lateness_us = int(spec.allowed_lateness.total_seconds() * 1_000_000)
    ahead_us = int((HOUR + spec.clock_skew).total_seconds() * 1_000_000)
    t_us, hb_us = F.unix_micros("event_time"), F.unix_micros("_ingestion_time")
    reason = (
        F.when(corrupt, "malformed_json")
        .when(F.col("_schema_version").isNull(), "unknown_schema_version")
        .when(F.col("event_id").isNull() | (F.col("event_id") == ""), "missing_event_id")
        .when(F.col("event_time").isNull(), "unparseable_event_time")
        .when(F.col("_invalid_field").isNotNull(), "invalid_field")
        .when(t_us < hb_us - lateness_us, "too_late")
        .when(t_us >= hb_us + ahead_us, "clock_skew")
    )
    return (
        parsed.select(
            "line",
            *METADATA_COLUMNS,
            event_id.alias("event_id"),
            event_time.alias("event_time"),
            invalid_field.alias("_invalid_field"),
            *payload.values(),
            "_r",
        )
        .withColumn("_reason", reason)
        .withColumn(
            "_attributed_time",
            F.when(F.col("_reason").isNull(), F.col("event_time")).otherwise(F.col("_ingestion_time")),
        )
        .drop("_r")
    )


def classify_window(records: DataFrame, start: datetime, end: datetime) -> DataFrame:
    """Keep the records attributed to [start, end) and rank admissible copies of each event id.

    `_copy` is 1 for the kept copy (earliest ingestion, then file and line), >1 for duplicates and null
    for quarantined records; `_payloads` is how many distinct raw lines the id arrived with.
    """
    mine = records.where(in_range("_attributed_time", start, end))
    admissible = F.col("_reason").isNull()
    # Copies are grouped per event-time day, so the outcome never depends on which range a run covers;
    # quarantined copies of an id (e.g. a too-late redelivery) are not copies of the admissible event.
    by_id = Window.partitionBy("event_id", F.to_date("_attributed_time"), "_reason")
    order = by_id.orderBy("_ingestion_time", "_source_file", "_line_number")
    return mine.withColumn("_copy", F.when(admissible, F.row_number().over(order))).withColumn(
        "_payloads", F.when(admissible, F.size(F.collect_set(F.xxhash64("line")).over(by_id)))
    )
