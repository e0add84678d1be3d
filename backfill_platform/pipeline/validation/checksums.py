"""Order-independent checksums: sums of 64-bit row hashes, exact (decimal, no overflow).

Two tables, or two runs, hold the same rows exactly when their counts and hash sums agree; the sums
are per bucket so that a difference points at the hour that differs.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F


def hash_sum(columns: list[str]) -> Column:
    """Sum of xxhash64 over the given columns of every row, as an exact decimal."""
    return F.sum(F.xxhash64(*(F.col(c) for c in columns)).cast("decimal(38,0)"))


def checksum(df: DataFrame, columns: list[str] | None = None) -> tuple[int, str]:
    """(row count, hash sum) of a DataFrame over `columns` (default: all of them)."""
    row = df.agg(F.count(F.lit(1)).alias("n"), hash_sum(columns or df.columns).alias("h")).collect()[0]
    return row["n"], str(row["h"] or 0)


def day_fingerprints(df: DataFrame, day: Column, days: list[str]) -> dict[str, tuple[int, str]]:
    """(rows, hash sum over every column) per day; a day without rows is (0, '0')."""
    rows = (
        df.groupBy(day.alias("_day"))
        .agg(F.count(F.lit(1)).alias("n"), hash_sum(df.columns).alias("h"))
        .collect()
    )
    found = {row["_day"].isoformat(): (row["n"], str(row["h"])) for row in rows}
    return {d: found.get(d, (0, "0")) for d in days}


def day_fingerprints_and_nulls(
    df: DataFrame, day: Column, days: list[str], columns: list[str]
) -> tuple[dict[str, tuple[int, str]], dict[str, int]]:
    """`day_fingerprints`, and the rows where each of `columns` is null (over all days), in one pass."""
    rows = (
        df.groupBy(day.alias("_day"))
        .agg(
            F.count(F.lit(1)).alias("n"),
            hash_sum(df.columns).alias("h"),
            *(F.count(F.when(F.col(c).isNull(), 1)).alias(f"_null_{c}") for c in columns),
        )
        .collect()
    )
    found = {row["_day"].isoformat(): (row["n"], str(row["h"])) for row in rows if row["_day"] is not None}
    nulls = {c: sum(int(row[f"_null_{c}"]) for row in rows) for c in columns}
    return {d: found.get(d, (0, "0")) for d in days}, nulls
