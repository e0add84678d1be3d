"""Is a line exactly one JSON object? Strict checks in the JVM, beside Spark's lenient parser.

Spark's `from_json` reads the first JSON value of a line and ignores the rest, and accepts what JSON does
not (`NaN`, single-quoted text): these checks, by Jackson's strict parses, say what the line really is.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F


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
