"""Order-independent checksums: sums of 64-bit row hashes, exact (decimal, no overflow).

Two tables, or two runs, hold the same rows exactly when their fingerprints (row count and hash sum)
agree; the sums are per bucket so that a difference points at the hour that differs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from backfill_platform.specs.grain import value_key


@dataclass(frozen=True)
class Fingerprint:
    """A set of rows, order-independently: how many, and the exact sum of their xxhash64 row hashes
    (a decimal string: the sum outgrows 64 bits).

    Dagster metadata shows it as `rows` and `row_hash_sum` (`metadata`); the ledger records it in the
    columns `<prefix>_rows` and `<prefix>_row_hash` (`columns`, `recorded`).
    """

    rows: int
    row_hash: str

    EMPTY: ClassVar[Fingerprint]

    def metadata(self) -> dict[str, Any]:
        return {"rows": self.rows, "row_hash_sum": self.row_hash}

    def columns(self, prefix: str) -> dict[str, Any]:
        """The ledger columns that record it: `{prefix}_rows`, `{prefix}_row_hash`."""
        return {f"{prefix}_rows": self.rows, f"{prefix}_row_hash": self.row_hash}

    @classmethod
    def recorded(cls, row: Mapping[str, Any], prefix: str) -> Fingerprint | None:
        """What a ledger row recorded in `columns(prefix)`; None for rows from before it was recorded."""
        rows, row_hash = row.get(f"{prefix}_rows"), row.get(f"{prefix}_row_hash")
        return None if rows is None or row_hash is None else cls(rows, row_hash)


Fingerprint.EMPTY = Fingerprint(0, "0")


def fingerprint_sum(fingerprints: Iterable[Fingerprint]) -> Fingerprint:
    """The fingerprint of the union of disjoint row sets: the sums are exact, so they add up."""
    found = list(fingerprints)
    return Fingerprint(sum(f.rows for f in found), str(sum(int(f.row_hash) for f in found)))


def hash_sum(columns: list[str]) -> Column:
    """Sum of xxhash64 over the given columns of every row, as an exact decimal."""
    return F.sum(F.xxhash64(*(F.col(c) for c in columns)).cast("decimal(38,0)"))


def checksum(df: DataFrame, columns: list[str] | None = None) -> Fingerprint:
    """The fingerprint of a DataFrame over `columns` (default: all of them)."""
    row = df.agg(F.count(F.lit(1)).alias("n"), hash_sum(columns or df.columns).alias("h")).collect()[0]
    return Fingerprint(row["n"], str(row["h"] or 0))


def day_fingerprints(df: DataFrame, day: Column, days: list[str]) -> dict[str, Fingerprint]:
    """Each day's fingerprint over every column; a day without rows is `Fingerprint.EMPTY`."""
    rows = (
        df.groupBy(day.alias("_day"))
        .agg(F.count(F.lit(1)).alias("n"), hash_sum(df.columns).alias("h"))
        .collect()
    )
    found = {value_key(row["_day"]): Fingerprint(row["n"], str(row["h"])) for row in rows}
    return {d: found.get(d, Fingerprint.EMPTY) for d in days}


def day_fingerprints_and_nulls(
    df: DataFrame, day: Column, days: list[str], columns: list[str]
) -> tuple[dict[str, Fingerprint], dict[str, int]]:
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
    found = {
        value_key(row["_day"]): Fingerprint(row["n"], str(row["h"]))
        for row in rows
        if row["_day"] is not None
    }
    nulls = {c: sum(int(row[f"_null_{c}"]) for row in rows) for c in columns}
    return {d: found.get(d, Fingerprint.EMPTY) for d in days}, nulls
