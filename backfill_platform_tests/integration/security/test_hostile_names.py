"""Names are checked whole (issue 59): a name ending in a newline never reaches Spark's SQL, where the
newline is whitespace and `v1\\n` names the table of `v1`. The spec fields: unit/specs/test_names.py."""

from __future__ import annotations

import pytest

from backfill_platform_tests.support.hostile import nothing_outside  # noqa: F401 - an autouse fixture


def test_drop_shadow_of_a_version_ending_in_a_newline_is_refused(spark, data_dir):
    """`drop-shadow --version $'v1\\n'` with `v1` active dropped the active shadow: now refused, naming the
    option, and every shadow is still there."""
    from backfill_platform.cli.errors import message_of
    from backfill_platform.lakehouse.tables import table_exists
    from backfill_platform.pipeline.promotion.cutover import drop_shadow
    from backfill_platform.pipeline.tables.dataset_tables import columns_ddl, shadow_table
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
