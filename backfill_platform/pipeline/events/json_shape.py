"""Is a line exactly one JSON object? Strict checks in the JVM, beside Spark's lenient parser.

Spark's `from_json` reads the first JSON value of a line and ignores the rest, and accepts what JSON does
not (`NaN`, single-quoted text): these checks, by Jackson's strict parses, say what the line really is.
Most lines are one plain object, and for those one strict parse (`strict_object_fields`, a function of the
platform's own jar) gives both the answer and the fields; the others are read and judged by the lenient
parser and `one_object`.
"""

from __future__ import annotations

import hashlib

from pyspark.errors import AnalysisException
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

# lakehouse/jvm/functions/StrictObjectFields.java, in the jar every session is given (lakehouse.jars).
STRICT_OBJECT_FIELDS_CLASS = "backfill_platform.functions.StrictObjectFields"


def strict_object_fields(
    spark: SparkSession, line: Column, schema: StructType, corrupt_column: str
) -> Column:
    """`line`'s fields of `schema` (text fields, objects of them), exactly as `from_json` reads them, when
    the line is one JSON object and nothing else (what `one_object` proves) and its fields need no judging;
    else null: not strict JSON (`NaN`, single quotes, a control character), text after the object, a
    declared key given twice, a non-object where `schema` has one. One streaming parse instead of three.
    `corrupt_column`, the top-level field `from_json` names as its corrupt-record column, stays null."""
    # A Java function's result type is fixed when it is registered: one name per schema.
    name = "backfill_strict_object_fields_" + hashlib.sha256(schema.json().encode()).hexdigest()[:16]
    try:
        spark.udf.registerJavaFunction(name, STRICT_OBJECT_FIELDS_CLASS, schema)
    except AnalysisException as error:
        raise RuntimeError(
            f"the platform's JVM functions are not on this Spark session's classpath ({STRICT_OBJECT_FIELDS_CLASS}): "
            "sessions get them from `lakehouse.jars.functions_jar()` (`make jars` builds it)"
        ) from error
    return F.call_udf(name, line, F.lit(schema.json()), F.lit(corrupt_column))


def one_object(line: Column) -> Column:
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


def values_on_line(line: Column) -> Column:
    """How many JSON objects a line holds back to back (`{...}{...}`, whitespace allowed between), or null.

    Putting a comma between every `}` and `{` makes the line an array of its objects; inside a string the
    same replacement changes only that string's text, never the array's shape, since `}{` can appear
    nowhere else in valid JSON. Meant for lines `one_object` refused: it says how many records they hold.
    """
    separated = F.regexp_replace(line, r"\}\s*\{", "},{")
    return F.json_array_length(F.concat(F.lit("["), separated, F.lit("]")))
