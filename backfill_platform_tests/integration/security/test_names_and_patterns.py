"""Names and patterns where Spark is the point (issue 59). A name is checked whole: one ending in a newline
never reaches Spark's SQL, where the newline is whitespace and `v1\\n` names the table of `v1` (the spec
fields: unit/specs/test_names.py). A `LIKE` pattern is a backtracking regex to Spark: an unbounded one is
refused before Spark sees it, and the worst a bounded one can do stays fast (unit/specs/test_like_patterns.py).
"""

from __future__ import annotations

import time

import pytest

from backfill_platform_tests.support.hostile import nothing_outside  # noqa: F401 - an autouse fixture


def test_drop_shadow_of_a_version_ending_in_a_newline_is_refused(spark, data_dir):
    """`drop-shadow --version $'v1\\n'` with `v1` active dropped the active shadow: now refused, naming the
    option, and every shadow is still there."""
    from backfill_platform.cli.errors import message_of
    from backfill_platform.lakehouse.tables import table_exists
    from backfill_platform.pipeline.names import shadow_table
    from backfill_platform.pipeline.promotion.cutover import drop_shadow
    from backfill_platform.pipeline.tables.dataset_tables import columns_ddl
    from backfill_platform_tests.support.datasets import dataset

    spec = dataset("views_newline_names", active="v1")
    shadows = {version: shadow_table(spark, spec, version) for version in ("v1", "v2")}
    for identifier in shadows.values():
        spark.sql(f"CREATE TABLE IF NOT EXISTS {identifier} ({columns_ddl(spec)}) USING iceberg")
    for hostile in ("v1\n", "v2\n", "v1\r\n", "v1 "):
        with pytest.raises(ValueError) as refused:
            drop_shadow(spark, spec, hostile)
        assert message_of(refused.value).startswith(f"version: {hostile!r} is not a safe identifier")
    assert all(table_exists(spark, identifier) for identifier in shadows.values())
    with pytest.raises(ValueError, match="active version"):
        drop_shadow(spark, spec, "v1")
    assert drop_shadow(spark, spec, "v2") == shadows["v2"]  # the retired one, named plainly, still drops
    assert table_exists(spark, shadows["v1"]) and not table_exists(spark, shadows["v2"])


def test_a_hostile_like_pattern_is_refused_quickly_and_a_bounded_one_stays_fast(spark):
    """`'%a%a…%b'` over 40-character values of `a` ran for minutes in Spark: refused in well under a
    second. The worst pattern the bound allows (one `%` before its end, the longest pattern) over values
    250 times longer still answers in seconds, and LIKE/ILIKE answer as before."""
    from pyspark.sql import functions as F

    from backfill_platform.specs.expressions import MAX_LIKE_PATTERN_CHARS, ExpressionError, checked_condition

    hostile = "%a" * 20 + "%b"
    started = time.monotonic()
    with pytest.raises(ExpressionError, match="21 '%' wildcards before its end"):
        checked_condition(f"value LIKE '{hostile}'", ["value"])
    assert time.monotonic() - started < 1

    values = spark.createDataFrame(
        [("a" * 10_000,)] * 200 + [("title-42 of 2026",), ("TITLE-7",), ("other",)], "value string"
    )
    worst = "%" + "a_" * ((MAX_LIKE_PATTERN_CHARS - 2) // 2) + "b"
    condition = checked_condition(f"value LIKE '{worst}'", ["value"])
    started = time.monotonic()
    assert values.filter(F.expr(condition)).count() == 0
    assert time.monotonic() - started < 60
    for pattern, expected in [("title-%", 1), ("%of 2026", 1), ("%-4_%", 1), ("t%7", 0), ("%", 203)]:
        assert (
            values.filter(F.expr(checked_condition(f"value LIKE '{pattern}'", ["value"]))).count() == expected
        )
    assert values.filter(F.expr(checked_condition("value ILIKE 'title-%'", ["value"]))).count() == 2
