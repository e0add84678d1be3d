"""The pinned read (`tables.read_at`): an older snapshot's rows, as `VERSION AS OF` reads them.

The table is this module's own (a namespace of its own), written in two commits with a column added in
between, so that the older snapshot has other rows and an older schema than the table has now.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta

import pytest
from pyspark.sql import functions as F

from backfill_platform.lakehouse.snapshots import current_snapshot_id
from backfill_platform.lakehouse.tables import (
    FANOUT_UP_TO_DAYS,
    ensure_table,
    read_at,
    replace_range,
    table_id,
)
from backfill_platform.pipeline.validation.fingerprints import checksum

D1, D2, D3 = date(2026, 10, 1), date(2026, 10, 2), date(2026, 10, 3)
COLUMNS = [("day", "date"), ("n", "bigint")]


def rows(df) -> list[tuple]:
    return sorted(tuple(r) for r in df.collect())


@pytest.fixture(scope="module")
def snapshots(spark):
    """(table, the first snapshot, the second one): one day written, then a column added and a second
    day written."""
    table = table_id(spark, "test_pinned_read", "days")
    spark.sql(f"DROP TABLE IF EXISTS {table}")
    ensure_table(spark, table, COLUMNS, "day")
    first = spark.createDataFrame([(D1, 1), (D1, 2)], "day date, n bigint")
    first_snapshot = replace_range(first, table, "day", D1, D2)
    ensure_table(spark, table, [*COLUMNS, ("label", "string")], "day")
    second = spark.createDataFrame([(D2, 3, "x")], "day date, n bigint, label string")
    second_snapshot = replace_range(second, table, "day", D2, D3)
    yield table, first_snapshot, second_snapshot
    spark.sql(f"DROP TABLE IF EXISTS {table}")


def test_read_at_an_older_snapshot_reads_its_rows_as_version_as_of_does(spark, snapshots):
    table, first, second = snapshots
    assert current_snapshot_id(spark, table) == second != first

    pinned = read_at(spark, table, first)
    version_as_of = spark.sql(f"SELECT * FROM {table} VERSION AS OF {first}")
    # The same rows; the column added since reads as null (the table's current schema).
    assert version_as_of.columns == ["day", "n"]
    assert pinned.columns == ["day", "n", "label"]
    assert rows(pinned.select("day", "n")) == rows(version_as_of) == [(D1, 1), (D1, 2)]
    assert pinned.where(F.col("label").isNotNull()).count() == 0
    # Row hashes skip nulls: the fingerprint is the one of the snapshot under its own schema.
    assert checksum(pinned) == checksum(version_as_of)
    assert checksum(pinned).rows == 2


def test_read_at_the_current_snapshot_or_none_reads_the_table_as_it_is(spark, snapshots):
    table, _, second = snapshots
    now = rows(spark.table(table))
    assert now == [(D1, 1, None), (D1, 2, None), (D2, 3, "x")]
    assert rows(read_at(spark, table, second)) == now
    assert rows(read_at(spark, table, None)) == now


def test_a_write_distributed_by_range_gives_the_same_rows_one_file_per_day(spark):
    # The events write of a big range asks Iceberg for a range distribution (`ingest._events_write_options`):
    # the option is taken and changes nothing but which task writes a day (a hash gives the same rows).
    table = table_id(spark, "test_pinned_read", "range_distributed")
    spark.sql(f"DROP TABLE IF EXISTS {table}")
    ensure_table(spark, table, [("ts", "timestamp"), ("n", "bigint")], "days(ts)")
    first, days = datetime(2026, 10, 1), 3
    data = [(first + timedelta(days=i % days, seconds=i), i) for i in range(days * 400)]
    snapshot = replace_range(spark.createDataFrame(data, "ts timestamp, n bigint"), table, "ts", first,
                             first + timedelta(days=days), options={"distribution-mode": "range"})  # fmt: skip
    assert rows(spark.table(table)) == sorted(data)
    summary = spark.sql(f"SELECT summary FROM {table}.snapshots WHERE snapshot_id = {snapshot}").first()[0]
    assert int(summary["added-data-files"]) == days


def test_a_long_range_is_written_exactly_one_file_per_day(spark):
    # Beyond FANOUT_UP_TO_DAYS, a write sorts by partition and keeps one file open (not one per day).
    table = table_id(spark, "test_pinned_read", "long_range")
    spark.sql(f"DROP TABLE IF EXISTS {table}")
    ensure_table(spark, table, [("ts", "timestamp"), ("n", "bigint")], "days(ts)")
    first, days = datetime(2026, 1, 1), 40
    assert days > FANOUT_UP_TO_DAYS
    # Rows of all days interleaved, as a shuffle would hand them over.
    data = [(first + timedelta(days=i % days, minutes=i % 1440), i) for i in range(days * 50)]
    snapshot = replace_range(spark.createDataFrame(data, "ts timestamp, n bigint"), table, "ts",
                             first, first + timedelta(days=days))  # fmt: skip
    assert rows(spark.table(table)) == sorted(data)
    summary = spark.sql(f"SELECT summary FROM {table}.snapshots WHERE snapshot_id = {snapshot}").first()[0]
    assert int(summary["added-data-files"]) == days
    # Replacing ten days of the middle leaves the thirty others as they were.
    middle = first + timedelta(days=10)
    new = [(middle + timedelta(days=i % 10, hours=1), -i) for i in range(100)]
    replace_range(spark.createDataFrame(new, "ts timestamp, n bigint"), table, "ts", middle,
                  middle + timedelta(days=10))  # fmt: skip
    kept = [r for r in data if not middle <= r[0] < middle + timedelta(days=10)]
    assert rows(spark.table(table)) == sorted(kept + new)
