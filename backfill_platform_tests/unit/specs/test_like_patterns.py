"""`LIKE`/`ILIKE` patterns are bounded (issue 59): Spark matches them with a backtracking Java regex, so a
pattern with more than one `%` before its end (`'%a%a…%b'`) is refused at load, quickly, naming the file,
the field and the pattern. That an allowed pattern stays fast in Spark: integration/security/test_names_and_patterns.py."""

from __future__ import annotations

import time

import pytest

from backfill_platform.specs.expressions import MAX_LIKE_PATTERN_CHARS, ExpressionError, checked_condition
from backfill_platform_tests.support.hostile import (  # noqa: F401 - nothing_outside is an autouse fixture
    DATASET,
    dataset,
    nothing_outside,
    refused_dataset,
)
from backfill_platform_tests.support.projects import load_project, write_project
from backfill_platform_tests.support.specs import mutated

COLUMNS = ["event_type", "title_id", "user_id"]
HOSTILE = "%a" * 20 + "%b"


def filter_rules(sql: str) -> list[dict]:
    return [{**DATASET["reconciliation"][0], "filter": sql}, DATASET["reconciliation"][1]]


@pytest.mark.parametrize(
    ("sql", "words"),
    [
        (f"title_id LIKE '{HOSTILE}'", f"LIKE pattern '{HOSTILE}' has 21 '%' wildcards before its end"),
        (f"title_id ILIKE '{HOSTILE}'", "ILIKE pattern"),
        (f"title_id NOT LIKE '{HOSTILE}'", "backtracking regular expression"),
        ("title_id LIKE '%a%b'", "has 2 '%' wildcards"),
        ("title_id LIKE 'a%%b'", "has 2 '%' wildcards"),
        ("title_id LIKE user_id", "pattern must be a string literal, not 'user_id'"),
        ("title_id LIKE concat('%', 'a', '%')", "pattern must be a string literal"),
        (f"title_id LIKE '{'x' * (MAX_LIKE_PATTERN_CHARS + 1)}%'", "longer than a pattern may be"),
        ("title_id LIKE ANY ('%a', '%b')", "ANY"),
        ("title_id LIKE 'a#%b' ESCAPE '#'", "ESCAPE"),
    ],
)
def test_unbounded_like_patterns_are_refused_at_load_quickly(tmp_path, sql, words):
    started = time.monotonic()
    message = refused_dataset(tmp_path, dataset(reconciliation=filter_rules(sql)))
    assert time.monotonic() - started < 5
    assert "field 'reconciliation[0].filter'" in message and words in message, message


def test_an_unbounded_pattern_in_an_aggregate_is_refused(tmp_path):
    message = refused_dataset(
        tmp_path, dataset(expected_rows={"expression": f"count_if(title_id LIKE '{HOSTILE}')"})
    )
    assert "field 'expected_rows.expression'" in message and "21 '%' wildcards" in message, message


@pytest.mark.parametrize(
    "pattern", ["start", "st%", "%art", "%tar%", "s%t", "s%t%%", "%", "2026-__-01", "%a_b%", "_%_"]
)
def test_bounded_patterns_load_and_reach_spark(tmp_path, pattern):
    rules = filter_rules(f"event_type LIKE '{pattern}' AND lower(title_id) ILIKE '{pattern}'")
    project = write_project(tmp_path, [mutated(), dataset(reconciliation=rules)])
    assert load_project(project).datasets["views_per_title"].reconciliation[0].filter == rules[0]["filter"]
    assert checked_condition(f"event_type LIKE '{pattern}'", COLUMNS) == f"event_type LIKE '{pattern}'"


def test_a_spec_built_in_code_is_refused_when_its_query_is_built():
    with pytest.raises(ExpressionError, match="wildcards before its end"):
        checked_condition(f"title_id LIKE '{HOSTILE}'", COLUMNS)
