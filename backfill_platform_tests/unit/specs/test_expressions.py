"""Spec SQL is data, not code (specs/expressions.py; issue 30): hostile or malformed filters and aggregates
are refused at load with the file, the field and the reason; ordinary ones reach Spark re-rendered, and only
that checked text, also for a spec built in code; seeded token soup is refused or harmless, never a crash.
That Spark substitutes nothing and no run stores a secret: integration/security/test_hostile_probes.py."""

from __future__ import annotations

import pytest

from backfill_platform.specs.expressions import checked_aggregate, checked_condition
from backfill_platform_tests.support.hostile import (  # noqa: F401 - nothing_outside is an autouse fixture
    DATASET,
    SENTINEL,
    dataset,
    nothing_outside,
    refused_dataset,
)

SQL_PROBES = [
    # (filter, the refusal's words)
    (
        "event_type = 'start' -- x\\\nOR (SELECT count(*) FROM platform.ingestions) > 0",
        "contains a comment ('--')",
    ),
    ("event_type = 'start' /* x */", "contains a comment ('/*')"),
    (f"reflect('java.io.File', 'createTempFile', '{SENTINEL.name}', '') IS NOT NULL", "calls 'reflect'"),
    ("java_method('java.lang.System', 'exit', 1) = 1", "calls 'java_method'"),
    ("event_type = '${env:AWS_SECRET_ACCESS_KEY}'", "contains a variable substitution ('${')"),
    ("event_type = '${spark.sql.catalog.lake.jdbc.password}'", "contains a variable substitution"),
    ("event_type IN (SELECT source_file FROM platform.ingestions)", "not SUBQUERY"),
    ("EXISTS (SELECT 1)", "EXISTS"),
    ("event_type = (SELECT max(x) FROM t)", "not SUBQUERY"),
    ("ingestions.event_type = 'start'", "must name columns of the events only"),
    ("platform.ingestions.event_type = 'start'", "must name columns of the events only"),
    ("my_udf(event_type) = 1", "calls 'my_udf'"),
    ("rand() < 0.5", "calls 'rand'"),
    ("event_type RLIKE '(a+)+$'", "calls 'regexplike'"),
    ("exists(array(1), x -> x = 1)", "calls 'exists'"),
    ("event_type = 'start'; DROP TABLE lake.prod.views", "statement separator"),
    ("event_type = 'it\\'s'", "contains a backslash"),
    ("event_type = 'a\x1b[31m'", "control character"),
    ("count(1) > 0", "may not aggregate"),
    ("row_number() OVER (ORDER BY event_time) = 1", "may not contain WINDOW"),
    ("(" * 3000 + "true" + ")" * 3000, "more than a rule may be"),
    ("event_type = ", "does not parse as Spark SQL"),
    ("", "is empty"),
]


@pytest.mark.parametrize(("sql", "words"), SQL_PROBES, ids=[f"sql{i}" for i in range(len(SQL_PROBES))])
def test_hostile_filters_are_refused_at_load(tmp_path, sql, words):
    rules = [{**DATASET["reconciliation"][0], "filter": sql}, DATASET["reconciliation"][1]]
    message = refused_dataset(tmp_path, dataset(reconciliation=rules))
    assert "field 'reconciliation[0].filter'" in message and words in message, message


@pytest.mark.parametrize(
    ("sql", "words"),
    [
        ("sum(position_sec) + (SELECT max(x) FROM t)", "not SUBQUERY"),
        ("position_sec", "must aggregate"),
        ("sum(position_sec) OVER ()", "may not contain WINDOW"),
        ("count(reflect('java.lang.Runtime', 'getRuntime'))", "calls 'reflect'"),
    ],
)
def test_hostile_aggregates_are_refused_at_load(tmp_path, sql, words):
    message = refused_dataset(tmp_path, dataset(expected_rows={"expression": sql}))
    assert "field 'expected_rows.expression'" in message and words in message, message


@pytest.mark.parametrize(
    ("sql", "rendered"),
    [
        ("event_type IN ('start', 'stop')", "event_type IN ('start', 'stop')"),
        ("to_date(event_time) <> DATE'2026-10-01'", "TO_DATE(event_time) <> CAST('2026-10-01' AS DATE)"),
        ("Event_Type = 'start' AND _line_number > 0", "Event_Type = 'start' AND _line_number > 0"),
        (
            "hour(event_time) BETWEEN 1 AND 3 AND x IS NOT NULL",
            "HOUR(event_time) BETWEEN 1 AND 3 AND NOT x IS NULL",
        ),
        ("true", "TRUE"),
    ],
)
def test_ordinary_filters_reach_spark_re_rendered(sql, rendered):
    assert checked_condition(sql, ["event_type", "event_time", "_line_number", "x"]) == rendered


def test_only_the_checked_text_reaches_spark_for_a_spec_built_in_code(data_dir):
    """A spec built in code skips the loader; the query builder checks again before Spark sees it."""
    from backfill_platform.pipeline.validation.buckets import _checked_rules

    rules = {"event_type = 'a' -- x\\\nOR (SELECT 1) = 1": [("_rows", "count(1)")]}
    with pytest.raises(ValueError, match="a rule of the dataset is refused: contains a comment"):
        _checked_rules(rules, ["event_type"])
    assert _checked_rules(
        {"event_type = 'a'": [("_rows", "count(DISTINCT event_type)")]}, ["event_type"]
    ) == {"event_type = 'a'": [("_rows", "COUNT(DISTINCT event_type)")]}
    assert checked_aggregate("sum(if(event_type = 'a', 1, 0))", ["event_type"]) == (
        "SUM(IF(event_type = 'a', 1, 0))"
    )


def test_random_token_soup_is_refused_or_harmless_never_a_crash():
    """Seeded fuzz: sqlglot fails on some malformed input with an IndexError; a rule gets a message."""
    import random

    from backfill_platform.specs.expressions import ExpressionError

    tokens = (
        "event_type count( sum( ) ( 'a' \"b\" = <> AND OR NOT IN (SELECT 1) , 1 x'41' CASE WHEN THEN END "
    )
    tokens += (
        "IS NULL `event_type` :: int CAST( AS DISTINCT * + [0] . -> x LIKE ? $1 { map( struct( reflect( "
    )
    tokens += "java_method( rand() hour( -- /* ${x} ; \\"
    words = tokens.split(" ")
    forbidden = ("SELECT", "REFLECT", "JAVA", "${", "--", "/*", ";", "\\", "RAND", "STRUCT", "MAP(", "?", "$")
    generator = random.Random(30)
    for _ in range(1500):
        sql = " ".join(generator.choice(words) for _ in range(generator.randint(1, 10)))
        for check in (checked_condition, checked_aggregate):
            try:
                rendered = check(sql, ["event_type", "x"])
            except ExpressionError:
                continue
            assert not any(word in rendered.upper() for word in forbidden), (sql, rendered)
