"""Turn archived JSON lines into classified records, as one lazy Spark plan.

The lines come from the archive's reader (`pipeline/archive/readers.py`). Every line read is classified exactly
once: an admissible event (kept or duplicate) or a quarantined record with a reason. Each line is attributed to one event-time partition — its event time when it is
admissible, otherwise its ingestion hour — so that every record of every archive file is counted once,
in exactly one partition's figures, whichever windows happen to read it.
"""

from __future__ import annotations

from datetime import timedelta

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType, TimestampType

from backfill_platform.pipeline.events import numbers
from backfill_platform.pipeline.events.json_shape import one_object, strict_object_fields, values_on_line
from backfill_platform.pipeline.hour_mapping import read_after, read_before
from backfill_platform.specs.common import FIELD_TYPES, column_name
from backfill_platform.specs.durations import HOUR, midnight
from backfill_platform.specs.stream import KAFKA_COLUMNS, SchemaVersion, StreamSpec
from backfill_platform.specs.upcasts import Cast, Default, Drop, Rename

CORRUPT = "_corrupt_record"
# Checked in this order; the first that applies is the record's reason. The first three are found while
# reading the file (see `archive.listing.iter_lines`), the last one while deduplicating.
REASONS = (
    "unreadable_file",
    "line_too_long",
    "invalid_utf8",
    "malformed_json",
    "multiple_json_values",
    "non_standard_number",
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
KAFKA_METADATA = tuple(name for name, _ in KAFKA_COLUMNS)  # null unless the archive is Kafka Connect's
# An ISO 8601 date *and* time (a date alone, or a bare year, is not an event time), optional offset.
_ISO_DATETIME = r"^\s*\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}(:?\d{2})?)?\s*$"
# The same with seconds and a final `Z` (UTC), the commonest form: see `_iso_timestamp`.
_ISO_SECONDS_Z = r"^\s*\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z\s*$"
# Epoch milliseconds: an integer of at most 15 digits (year < 33658), so that no conversion overflows.
_EPOCH_MILLIS = r"^\s*-?\d{1,15}\s*$"
# Epoch microseconds (at most 18 digits) and seconds (a decimal number, its exponent as Jackson writes a
# double): within a long's range of microseconds.
_EPOCH_MICROS = r"^\s*-?\d{1,18}\s*$"
_EPOCH_SECONDS = r"^\s*-?\d{1,12}(\.\d{1,17})?([eE][+-]?\d{1,2})?\s*$"
_INTEGER = r"^\s*[+-]?\d+\s*$"
_DATE = r"^\s*\d{4}-\d{2}-\d{2}\s*$"


def _raw_schema(spec: StreamSpec) -> StructType:
    """Every field the spec reads, as text, nested fields inside objects: typing happens per version, so
    a bad value becomes a reason, not a null. (An object or array where text is declared is read as its
    JSON text.)"""
    tree: dict = {}
    for path in spec.source_fields():
        node = tree
        for part in path.split("."):
            node = node.setdefault(part, {})

    def struct(node: dict) -> StructType:
        return StructType([StructField(k, struct(v) if v else StringType()) for k, v in sorted(node.items())])

    return StructType([*struct(tree).fields, StructField(CORRUPT, StringType())])


def _raw(path: str, parsed: str = "_v") -> Column:
    """A raw field: `name`, or a nested `a.b.c` (null when any object on the way is missing), of the
    record as read (`_v`: the line, or its clean copy where non-standard numbers are read), or of the
    lenient parse of the line itself (`_r`)."""
    column = F.col(parsed)
    for part in path.split("."):
        column = column.getField(part)
    return column


def _objects_on_paths(paths: list[str]) -> list[str]:
    """The paths that must hold JSON objects: every proper prefix of a nested field of `paths`."""
    return sorted({".".join(p.split(".")[:i]) for p in paths for i in range(1, p.count(".") + 1)})


def _not_an_object(paths: list[str], line: Column) -> Column:
    """The first path that should hold an object for a field of `paths` but holds another value, or null.

    Spark's parser then flags the record as corrupt although it is valid JSON (it still reads the rest):
    such a record is an `invalid_field` naming that path, not `malformed_json`.
    """
    checks = [
        F.when(~F.trim(F.get_json_object(line, f"$.{path}")).startswith("{"), F.lit(path))
        for path in _objects_on_paths(paths)
    ]
    return F.coalesce(*checks, F.lit(None).cast("string"))


def _version_paths(spec: StreamSpec, version: SchemaVersion) -> list[str]:
    return [spec.event_id_field, spec.event_time.field, version.match.field, *version.fields]


def _matches(version: SchemaVersion) -> Column:
    value = _raw(version.match.field)
    return value.isNull() if version.match.missing else value == F.lit(str(version.match.equals))


def _event_time(spec: StreamSpec, version: SchemaVersion) -> Column:
    text = _raw(spec.event_time.field)
    match spec.time_format(version):
        case "epoch_millis":
            return F.when(text.rlike(_EPOCH_MILLIS), F.timestamp_millis(F.trim(text).cast("long")))
        case "epoch_micros":
            return F.when(text.rlike(_EPOCH_MICROS), F.timestamp_micros(F.trim(text).cast("long")))
        case "epoch_seconds":
            # Exact decimal arithmetic: a double would turn `1700000000.123456` into ...123455. A JSON
            # number with a fraction reaches here as Jackson's double text (`1.700000000123456E9`), so
            # an exponent is accepted; a value finer than a microsecond would be rounded: refused.
            micros = F.trim(text).cast("decimal(38,15)") * F.lit(1_000_000)
            exact = (micros == F.floor(micros)) & (F.abs(micros) < F.lit(10**18))
            return F.when(text.rlike(_EPOCH_SECONDS) & exact, F.timestamp_micros(micros.cast("long")))
    return F.when(text.rlike(_ISO_DATETIME), _iso_timestamp(text))


def _iso_timestamp(text: Column) -> Column:
    """ISO 8601 text as a timestamp, exactly as Spark's cast reads it; a final `Z` without its cost.

    On Spark 3.5 the cast compiles two regular expressions for every value that names a zone (to normalise
    the zone's text; 4.x compiles them once but still runs both): about a tenth of the parse's CPU on an
    archive of `...Z` times. The session's zone is UTC (`SparkIcebergResource` forces it; `parse_records`
    refuses another), so a time with seconds and a final `Z` is the same instant without it. (Without
    seconds Spark reads no zone at all: `13:33Z` is not a time to it, so such text keeps the cast.)
    """
    trimmed = F.trim(text)
    # `F.trim` strips spaces only: a `Z` followed by a tab or a line break keeps the cast, which trims
    # those itself.
    utc = text.rlike(_ISO_SECONDS_Z) & trimmed.endswith("Z")
    without_z = trimmed.substr(F.lit(1), F.length(trimmed) - 1)
    return F.when(utc, without_z.cast(TimestampType())).otherwise(trimmed.cast(TimestampType()))


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
        return F.when(text.rlike(_ISO_DATETIME), _iso_timestamp(text))
    return value


def _number_tokens(version: SchemaVersion, reading: str, columns: dict[str, Column]) -> list[Column]:
    """Where the version reads non-standard numbers (`missing`, `keep`), the fields whose token makes the
    record an `invalid_field`; with `keep`, a `double` field's token becomes its value in `columns`."""
    if reading == "quarantine":  # such a record never gets this far: it is a `non_standard_number`
        return []
    lenient, clean, tokens = F.col("_r"), F.col("_rc"), F.col("_numbers_only")
    invalid = [
        F.when(tokens & numbers.nested_token(lenient, clean, name), F.lit(name)) for name in version.fields
    ]
    if reading == "keep":
        for name, kind in version.fields.items():
            held = tokens & numbers.token_at(lenient, clean, name)
            if kind == "double":
                columns[name] = F.when(held, numbers.token_as_double(lenient, name)).otherwise(columns[name])
            else:
                invalid.append(F.when(held, F.lit(name)))
    return invalid


def _upcast(version: SchemaVersion, latest: dict[str, str], reading: str) -> tuple[dict[str, Column], Column]:
    """The version's payload as latest-schema columns, and the name of its first ill-typed field."""
    columns = {name: _typed(_raw(name), kind) for name, kind in version.fields.items()}
    types = dict(version.fields)
    invalid = [
        F.when(_raw(name).isNotNull() & columns[name].isNull(), F.lit(name))
        for name, kind in version.fields.items()
        if kind != "string"
    ]
    invalid += _number_tokens(version, reading, columns)
    for step in version.upcast:
        match step:
            case Rename(rename=rename):
                columns[rename.to] = columns.pop(rename.from_)
                types[rename.to] = types.pop(rename.from_)
            case Default(default=default):
                name = default.field
                columns[name] = F.lit(default.value).cast(FIELD_TYPES[latest[name]])
                types[name] = latest[name]
            case Cast(cast=cast):
                name, before = cast.field, columns[cast.field]
                after = before.cast(FIELD_TYPES[cast.type])
                # A value the upcast loses (unparseable, overflowed, truncated) is as invalid as a mistyped
                # one: it must round-trip to what the record said.
                lossy = after.isNull() | (after.cast(FIELD_TYPES[types[name]]) != before)
                invalid.append(F.when(before.isNotNull() & lossy, F.lit(name)))
                columns[name], types[name] = after, cast.type
            case Drop(drop=name):
                del columns[name]
                del types[name]
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


def as_micros(value: timedelta) -> int:
    return value // timedelta(microseconds=1)


def _malformed_detail(line: Column, tokens: Column) -> Column:
    """Why a line is not JSON, where that can be told: a NUL byte, or what only Spark's lenient parser
    accepts (it reads the first value of a line, and single-quoted text), with the non-standard
    numbers the line also holds named (`tokens`, null when it holds none)."""
    # Spark read an object, Jackson did not.
    lenient_only = F.col("_r").isNotNull() & _raw(CORRUPT, "_r").isNull()
    not_strict = F.lit("text after the JSON object, or single-quoted text")
    return (
        F.when(line.contains("\u0000"), F.lit("NUL byte"))
        .when(
            lenient_only & tokens.isNotNull(), F.concat(not_strict, F.lit("; the line also holds "), tokens)
        )
        .when(lenient_only, not_strict)
    )


def parse_records(lines: DataFrame, spec: StreamSpec) -> DataFrame:
    """Parse, recognise the schema version, upcast to the latest and give each record its reason (or null).

    A record is attributed to its event time when admissible, otherwise to its ingestion hour, and never
    before the stream's first partition: what would be attributed earlier (an admissible event of an
    earlier day, reason `before_first_partition`, or any record of an ingestion hour before it) is
    attributed to the first partition's start, so that it is counted there instead of nowhere.
    """
    zone = lines.sparkSession.conf.get("spark.sql.session.timeZone")
    if zone != "UTC":  # every day, hour and ISO time here is UTC (see `_iso_timestamp`)
        raise ValueError(
            f"the Spark session's time zone must be UTC, not {zone!r} (SparkIcebergResource sets it)"
        )
    strict_line = F.coalesce(F.col("_clean"), F.col("line"))
    corrupt = _corrupt(spec, strict_line)
    parsed = _read_json(lines, spec).withColumn(
        "_schema_version", F.when(~corrupt, _version_rule(spec)).cast("int")
    )
    shape = {
        v.version: F.when(_raw(CORRUPT).isNotNull(), _not_an_object(_version_paths(spec, v), strict_line))
        for v in spec.schema_versions
    }
    upcasts = {
        v.version: _upcast(v, spec.latest.fields, spec.number_reading(v)) for v in spec.schema_versions
    }
    # How the record's version reads non-standard numbers (the stream's setting when no version matched).
    reading = F.coalesce(
        _by_version(spec, {v.version: F.lit(spec.number_reading(v)) for v in spec.schema_versions}),
        F.lit(spec.non_standard_numbers),
    )
    payload = {
        name: _by_version(spec, {n: cols[name] for n, (cols, _) in upcasts.items()}).alias(column_name(name))
        for name in spec.latest.fields
    }
    invalid_field = _by_version(spec, {n: F.coalesce(shape[n], bad) for n, (_, bad) in upcasts.items()})
    event_time = _by_version(spec, {v.version: _event_time(spec, v) for v in spec.schema_versions})
    event_id = F.trim(_raw(spec.event_id_field))
    first = midnight(spec.first_partition)
    return (
        parsed.select(
            *_sequence_columns(spec),
            "line",
            "_raw",
            "_defect",
            "_defect_detail",
            *METADATA_COLUMNS,
            *KAFKA_METADATA,
            event_id.alias("event_id"),
            event_time.alias("event_time"),
            invalid_field.alias("_invalid_field"),
            *payload.values(),
            *_PARSE_COLUMNS,
            *_subject_column(spec, payload),
            reading.alias("_reading"),
            F.when(
                F.col("_clean").isNotNull(),
                numbers.token_detail(
                    F.col("_r"), F.col("_rc"), spec.source_fields(), F.col("line"), F.col("_numbers_only")
                ),
            ).alias("_tokens"),
        )
        .withColumn("_reason", _reason(spec, corrupt, strict_line))
        .withColumn("_detail", _detail(spec, strict_line))
        .withColumn(
            "_attributed_time",
            F.greatest(
                F.when(F.col("_reason").isNull(), F.col("event_time")).otherwise(F.col("_ingestion_time")),
                F.lit(first),
            ),
        )
        .drop(*_PARSE_COLUMNS, "_reading", "_tokens", "_defect", "_defect_detail")
    )


# The working columns of the parse: dropped once every record has its reason and payload.
_PARSE_COLUMNS = ("_r", "_rc", "_v", "_valid", "_clean", "_numbers_only")


def _read_json(lines: DataFrame, spec: StreamSpec) -> DataFrame:
    """Each line read as JSON (`_r`: by one strict parse where that settles it, else leniently), whether it
    is one object (`_valid`), and its reading after non-standard numbers are cleaned (`_clean`,
    `_numbers_only`, `_rc`); `_v` is the reading to use."""
    options = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT}
    schema = _raw_schema(spec)
    return (
        # One strict parse settles most lines (`_strict`); only the others are read leniently and judged.
        lines.withColumn("_strict", strict_object_fields(lines.sparkSession, F.col("line"), schema, CORRUPT))
        .withColumn("_r", F.coalesce(F.col("_strict"), F.from_json("line", schema, options)))
        .withColumn("_valid", F.col("_strict").isNotNull() | one_object(F.col("line")))
        .drop("_strict")
        # Non-standard numbers (`numbers.py`): a line whose only defect they are is read from its clean copy.
        .withColumn("_clean", numbers.clean_line(F.col("line"), F.col("_valid")))
        .withColumn(
            "_numbers_only",
            F.coalesce(F.col("_clean").isNotNull() & one_object(F.col("_clean")), F.lit(False)),
        )
        .withColumn("_rc", F.when(F.col("_numbers_only"), F.from_json("_clean", schema, options)))
        .withColumn("_v", F.when(F.col("_numbers_only"), F.col("_rc")).otherwise(F.col("_r")))
    )


def _version_rule(spec: StreamSpec) -> Column:
    """The schema version whose rule the record matches; the newest matching rule wins."""
    version = None
    for candidate in reversed(spec.schema_versions):
        rule = _matches(candidate)
        version = (
            F.when(rule, F.lit(candidate.version))
            if version is None
            else version.when(rule, candidate.version)
        )
    return version


def _corrupt(spec: StreamSpec, strict_line: Column) -> Column:
    """The line is not one readable JSON object of the stream's shape."""
    # Spark flags a valid object as corrupt (still reading the rest) when a path declared to hold an
    # object holds another value: that record is read, and the path is an invalid field of the versions
    # declaring a field inside it. Only streams with nested fields can meet it.
    shape_only = _raw(CORRUPT).isNotNull() & F.lit(bool(_objects_on_paths(spec.source_fields())))
    readable = F.col("_valid") | F.col("_numbers_only")
    shape_only = shape_only & readable & _not_an_object(spec.source_fields(), strict_line).isNotNull()
    return F.col("_v").isNull() | (_raw(CORRUPT).isNotNull() & ~shape_only) | ~readable


def _reason(spec: StreamSpec, corrupt: Column, strict_line: Column) -> Column:
    """Why the record is quarantined (the first defect in this order), or null when it is admissible."""
    # Admissible in the ingestion hour [hb, hb + 1h): hb + 1h - read_after <= t < hb + read_before.
    earliest_us = as_micros(HOUR - read_after(spec.allowed_lateness))
    ahead_us = as_micros(read_before(spec.clock_skew))
    t_us, hb_us = F.unix_micros("event_time"), F.unix_micros("_ingestion_time")
    return (
        F.when(F.col("_defect").isNotNull(), F.col("_defect"))
        .when(corrupt & (values_on_line(strict_line) > 1), "multiple_json_values")
        .when(corrupt, "malformed_json")
        .when(F.col("_numbers_only") & (F.col("_reading") == "quarantine"), "non_standard_number")
        .when(F.col("_schema_version").isNull(), "unknown_schema_version")
        .when(F.col("event_id").isNull() | (F.col("event_id") == ""), "missing_event_id")
        .when(F.col("event_time").isNull(), "unparseable_event_time")
        .when(F.col("_invalid_field").isNotNull(), "invalid_field")
        .when(t_us < hb_us + earliest_us, "too_late")
        .when(t_us >= hb_us + ahead_us, "clock_skew")
        .when(F.col("event_time") < F.lit(midnight(spec.first_partition)), "before_first_partition")
    )


def _detail(spec: StreamSpec, strict_line: Column) -> Column:
    """What the quarantine record shows of its reason: the defect, the offending value or the time."""
    reason = F.col("_reason")
    return (
        F.when(F.col("_defect").isNotNull(), F.col("_defect_detail"))
        .when(reason == "malformed_json", _malformed_detail(F.col("line"), F.col("_tokens")))
        .when(
            reason == "multiple_json_values",
            F.format_string(
                "%d JSON values on one line (records written without a delimiter)",
                values_on_line(strict_line),
            ),
        )
        .when(reason == "non_standard_number", F.col("_tokens"))
        .when(
            reason == "unparseable_event_time",
            F.coalesce(_raw(spec.event_time.field), numbers.token_text(F.col("_r"), spec.event_time.field)),
        )
        .when(reason == "invalid_field", F.col("_invalid_field"))
        .when(
            reason.isin("too_late", "clock_skew", "before_first_partition"),
            F.col("event_time").cast("string"),
        )
    )


def _sequence_columns(spec: StreamSpec) -> list[Column]:
    """Per-producer sequence numbers (`sequence`): kept whatever the record's fate, since a quarantined
    record still used its number; a value that is not an integer proves nothing and is left null."""
    sequence = spec.sequence
    if sequence is None:
        return []
    return [
        F.trim(_raw(sequence.key)).alias("_sequence_key"),
        F.when(_raw(sequence.field).rlike(_INTEGER), F.trim(_raw(sequence.field)).cast("long")).alias(
            "_sequence"
        ),
    ]


def _subject_column(spec: StreamSpec, payload: dict[str, Column]) -> list[Column]:
    """Who the record is about (`subject_field`), as text, for erasure: the upcast value, so that every
    schema version is matched through its upcasts, else the raw text at the field's path, so that a record
    quarantined before it is typed (an unknown schema version, an invalid field) is still recognised."""
    if spec.subject_field is None:
        return []
    upcast = payload[spec.subject_field].cast("string")
    return [F.coalesce(upcast, F.trim(_raw(spec.subject_field))).alias("_subject")]
