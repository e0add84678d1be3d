"""Probes of the boundary (issue 30), spec SQL and secrets: hostile or malformed rules are refused with a
message naming the file, the field and the reason; Spark only gets the checked text; no run stores a
secret. No Spark but where a run is the point."""

from __future__ import annotations

from pathlib import Path

import pytest

from backfill_platform.specs.expressions import checked_aggregate, checked_condition
from backfill_platform_tests.support.hostile import (  # noqa: F401 - nothing_outside is an autouse fixture
    DATASET,
    SENTINEL,
    dataset,
    hostile_archive,
    nothing_outside,
    refused_dataset,
    write_yaml,
)

# --- SQL: data, not code -------------------------------------------------------------------------

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
@pytest.mark.unit
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
@pytest.mark.unit
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
@pytest.mark.unit
def test_ordinary_filters_reach_spark_re_rendered(sql, rendered):
    assert checked_condition(sql, ["event_type", "event_time", "_line_number", "x"]) == rendered


@pytest.mark.unit
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


def test_spark_substitutes_no_variable_even_when_asked_to(spark, spark_resource):
    """Spark's `${…}` substitution is off in the platform's sessions, whatever `spark_config` says."""
    from pyspark.sql import functions as F

    asked = spark_resource.model_copy(update={"spark_config": {"spark.sql.variable.substitute": "true"}})
    assert asked.full_spark_config()["spark.sql.variable.substitute"] == "false"
    assert spark.conf.get("spark.sql.variable.substitute") == "false"
    spark._jvm.java.lang.System.setProperty("issue30.fake.secret", "fake-secret-30")
    row = spark.range(1).select(F.expr("'${system:issue30.fake.secret}'").alias("v")).first()
    assert row.v == "${system:issue30.fake.secret}"
    assert (
        spark.sql("SELECT '${system:issue30.fake.secret}' AS v").first().v == "${system:issue30.fake.secret}"
    )


@pytest.mark.unit
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


# --- secrets never stored ------------------------------------------------------------------------

FAKE_SECRETS = {
    "AWS_ACCESS_KEY_ID": "AKIAISSUE30FAKEKEYID",
    "AWS_SECRET_ACCESS_KEY": "issue30-fake-aws-secret-0f9e8d7c6b5a",
    "AWS_SESSION_TOKEN": "issue30-fake-session-token-1a2b3c",
    "BACKFILL_PLATFORM_CATALOG_PASSWORD": "issue30-fake-catalog-password-4d5e",
}


def bytes_holding(folder: Path, secrets: list[bytes]) -> list[str]:
    """Every file below `folder` whose bytes hold one of `secrets`."""
    found = []
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            found += [f"{path}: {secret!r}" for secret in secrets if secret in data]
    return found


@pytest.mark.timeout(900)
def test_a_run_of_a_hostile_spec_stores_no_secret(
    tmp_path, monkeypatch, spark, spark_resource, data_dir, playback, events_materialized
):
    """A dataset built in code (past the loader) whose rules try Spark's substitution: the run refuses
    them, and no byte written by it (data directory, Dagster's run and event storage) holds a secret."""
    from dagster import DagsterInstance, materialize

    from backfill_platform.pipeline.shadow.assets import build_shadow_asset
    from backfill_platform_tests.support.datasets import dataset as views_dataset
    from backfill_platform_tests.support.session import START, range_tags

    for name, value in FAKE_SECRETS.items():
        monkeypatch.setenv(name, value)
    # The JVM's environment was fixed when it started; a system property stands for a secret it holds.
    spark._jvm.java.lang.System.setProperty("issue30.secret", FAKE_SECRETS["AWS_SECRET_ACCESS_KEY"])
    rules = [
        {"column": "views", "filter": "event_type = '${system:issue30.secret}'", "expression": "count(1)"},
        {
            "column": "watch_seconds",
            "filter": "event_type = '${env:AWS_SECRET_ACCESS_KEY}'",
            "expression": "sum(position_sec)",
        },
    ]
    spec = views_dataset("views_secret_probe", reconciliation=rules)
    (tmp_path / "dagster").mkdir()
    with DagsterInstance.local_temp(tempdir=str(tmp_path / "dagster")) as instance:
        result = materialize(
            [build_shadow_asset(spec, [playback], "v2")],
            resources={"spark": spark_resource},
            tags=range_tags(START, START),
            instance=instance,
            raise_on_error=False,
        )
        logs = "\n".join(str(event) for event in instance.all_logs(result.run_id))
    assert "a rule of the dataset is refused: contains a variable substitution ('${')" in logs
    secrets = [value.encode() for value in FAKE_SECRETS.values()]
    assert not any(secret in logs.encode() for secret in secrets)
    assert bytes_holding(tmp_path / "dagster", secrets) == []
    assert bytes_holding(data_dir, secrets) == []
    spark._jvm.java.lang.System.clearProperty("issue30.secret")
