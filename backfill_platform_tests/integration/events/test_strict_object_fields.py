"""The events' one strict parse (the platform's JVM function) against what it replaces, on every Spark line.

For a line it settles, `strict_object_fields` must give exactly `from_json`'s struct and only where
`one_object` holds; every other line it leaves (null) to the lenient path. Both invariants together are
what makes the parse's `_r` and `_valid` the same with it as without it, so no outcome, reason or value of
any record can change.
"""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from backfill_platform.pipeline.events.json_shape import one_object, strict_object_fields

pytestmark = pytest.mark.both_spark_lines

SCHEMA = StructType(
    [
        StructField("a", StringType()),
        # A nested field of the corrupt column's name is an ordinary field.
        StructField(
            "b",
            StructType(
                [
                    StructField("_corrupt_record", StringType()),
                    StructField("x", StringType()),
                    StructField("y", StringType()),
                ]
            ),
        ),
        StructField("c", StringType()),
        StructField("_corrupt_record", StringType()),
    ]
)
# Lines the strict parse settles: one plain JSON object, however its values are written.
SETTLED = [
    '{"a":"x","b":{"x":"1","y":2},"c":3}',
    '   {"a": 1.50, "c": -0}   ',
    '{"a": 1e400, "c": 0.1e-7}',
    '{"a": -1.0E+2, "c": 12345678901234567890123}',
    '{"a": true, "c": false}',
    '{"a": {"deep": [1, 2.50, "q", null, {"k": "v"}]}, "c": [ ]}',
    '{"a": null, "b": null}',
    '{"b": {}, "z": {"ignored": [1, {"k": null}]}}',
    '{"A": "an undeclared key", "a": "declared"}',
    '{"a": "\u00e9\u4e2d\U0001f600", "c": "tab\\there, quote \\" and \\u00e9"}',
    '{"a\\u0062": "escaped name, undeclared", "\\u0061": "escaped name of a"}',
    '{"b": {"x": {"nested": 1}, "y": "t", "w": 3}}',
    '{ "a" : "x" , "c" : 2 }',
    "{}",
    '{"_corrupt_record": "a key of that name is not read"}',
    '{"z": ' + "[" * 998 + "]" * 998 + "}",  # 999 levels deep
    "{" + ", ".join(f'"k{i}": {{"n": {i}}}' for i in range(128)) + "}",  # 256 names
    '{"b": {"_corrupt_record": "but it is read here"}}',
]
# Lines it leaves to the lenient path, each for its reason.
LEFT = [
    '{"a": NaN}',  # not JSON: a non-standard number
    '{"a": -Infinity, "c": 1}',
    "{'a': 'x'}",  # single quotes
    '{"a": 01}',  # a leading zero
    '{"a":"x"}{"a":"y"}',  # two records on a line
    '{"a":"x"} trailing',
    '{"a":"x"}]',
    '{"a":"x","a":"y"}',  # a declared key twice
    '{"b": "not an object"}',  # a value other than an object where one is declared
    '{"b": [1]}',
    '{"b": {"x": "1", "x": "2"}}',
    '{"a":"nul\u0000"}',  # a NUL byte in a string
    '{"a":"control\u0001"}',
    '\t{"a":"x"}',  # only spaces are trimmed, as one_object does
    '{"a":"x"}\r',
    '\ufeff{"a":"byte order mark"}',
    '[{"a":"x"}]',
    '"text"',
    "",
    "{",
    '{"a":',
    '{"a": "unterminated}',
    # 1,000 levels: from_json reads it, but one_object parses it one level deeper, past Jackson's limit.
    '{"z": ' + "[" * 999 + "]" * 999 + "}",
    # Past 256 names: Jackson's name tables (from_json's, one_object's) refuse a line with too many that
    # collide, depending on the lines before it; such lines stay theirs to judge.
    "{" + ", ".join(f'"k{i}": {{"n": {i}}}' for i in range(128)) + ', "a": 1}',
]


@pytest.fixture(scope="module")
def judged(spark):
    lines = spark.createDataFrame([(line,) for line in SETTLED + LEFT], "line string")
    options = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "_corrupt_record"}
    rows = lines.select(
        "line",
        strict_object_fields(spark, F.col("line"), SCHEMA, "_corrupt_record").alias("strict"),
        F.from_json("line", SCHEMA, options).alias("lenient"),
        one_object(F.col("line")).alias("one_object"),
    ).collect()
    return {row["line"]: row for row in rows}


def test_a_settled_line_is_read_exactly_as_from_json_reads_it(judged):
    for line in SETTLED:
        row = judged[line]
        assert row["strict"] is not None, f"not settled: {line!r}"
        assert row["strict"] == row["lenient"], line
        assert row["one_object"], line
    # Spark's own texts for numbers, copied by Jackson's generator.
    assert judged[SETTLED[1]]["strict"]["a"] == "1.5"
    assert judged[SETTLED[1]]["strict"]["c"] == "0"
    assert judged[SETTLED[2]]["strict"]["a"] == '"Infinity"'
    assert judged[SETTLED[5]]["strict"]["a"] == '{"deep":[1,2.5,"q",null,{"k":"v"}]}'
    assert judged[SETTLED[10]]["strict"]["a"] == "escaped name of a"


def test_every_other_line_is_left_to_the_lenient_path(judged):
    for line in LEFT:
        assert judged[line]["strict"] is None, f"settled, but it is not one plain object: {line!r}"


def test_the_parse_reads_and_judges_every_line_as_without_it(judged):
    """`_r = coalesce(strict, lenient)` and `_valid = strict is not null or one_object`: the same as the
    lenient reading and `one_object` alone, on every line."""
    for line, row in judged.items():
        reading = row["strict"] if row["strict"] is not None else row["lenient"]
        assert reading == row["lenient"], line
        assert (row["strict"] is not None or row["one_object"]) == row["one_object"], line
