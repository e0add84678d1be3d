"""Fingerprints: a set of rows, order-independently, as a row count and an exact sum of 64-bit row hashes.

Two tables, or two runs, hold the same rows exactly when their fingerprints agree. This is the one module
that holds the `Fingerprint` type and every way one is made: the Spark expressions that compute hash sums
(`hash_sum`) and fingerprints per partition (`fingerprints_by_partition`, `dataset_table_fingerprints` of a dataset
table, `input_fingerprints` of what a dataset partition reads through its lookback), and the pure
combinations (`fingerprint_sum` of disjoint sets, `from_sums` of collected counts and sums,
`fingerprints_from_buckets` bucket figures). Everything else that needs a fingerprint calls these.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any, ClassVar, Protocol

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from backfill_platform.pipeline.partitions import partition_of
from backfill_platform.pipeline.tables.dataset_tables import table_partition
from backfill_platform.specs.dataset import DatasetSpec, SourceInput
from backfill_platform.specs.grain import Grain, value_key


@dataclass(frozen=True)
class Fingerprint:
    """A set of rows, order-independently: how many, and the exact sum of their xxhash64 row hashes
    (a decimal string: the sum outgrows 64 bits).

    Dagster metadata shows it as `rows` and `row_hash_sum` (`metadata`); the ledger records it in the
    columns `<prefix>_rows` and `<prefix>_row_hash` (`columns`, `recorded`), or as text (`text`, `parse`).
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

    def text(self) -> str:
        """As text, `rows/row_hash` (`1200/-4467…`): how the ledger records one source's share of a
        dataset day's inputs (`partition_inputs.PartitionInputs.text`)."""
        return f"{self.rows}/{self.row_hash}"

    @classmethod
    def parse(cls, text: str) -> Fingerprint:
        """The fingerprint `text()` wrote."""
        rows, row_hash = text.split("/")
        return cls(int(rows), row_hash)


Fingerprint.EMPTY = Fingerprint(0, "0")


class HashedRows(Protocol):
    """Figures that carry a row count and a row-hash sum (a bucket's, `validation.buckets.BucketFigures`)."""

    rows: int
    row_hash: str


# Pure combinations


def fingerprint_sum(fingerprints: Iterable[Fingerprint]) -> Fingerprint:
    """The fingerprint of the union of disjoint row sets: the sums are exact, so they add up."""
    found = list(fingerprints)
    return Fingerprint(sum(f.rows for f in found), str(sum(int(f.row_hash) for f in found)))


def from_sums(
    rows: Mapping[str, int], hashes: Mapping[str, int], keys: Iterable[str]
) -> dict[str, Fingerprint]:
    """Each partition's fingerprint from its row count and hash sum; a partition without a count is
    `Fingerprint.EMPTY` (one whose hash sums cancel out to 0 still has its rows)."""
    return {k: Fingerprint(rows[k], str(hashes.get(k, 0))) if k in rows else Fingerprint.EMPTY for k in keys}


def fingerprints_from_buckets(
    figures: Mapping[tuple[str, int | None], HashedRows], days: list[str]
) -> dict[str, Fingerprint]:
    """Each partition's fingerprint from its buckets' figures (keyed by (partition, hour)): the same as
    `dataset_table_fingerprints` computes from the table, since a partition's hash sum is the exact sum of
    its buckets' hash sums."""
    rows: dict[str, int] = {}
    hashes: dict[str, int] = {}
    for (day, _hour), figure in figures.items():
        rows[day] = rows.get(day, 0) + figure.rows
        hashes[day] = hashes.get(day, 0) + int(figure.row_hash)
    return from_sums(rows, hashes, days)


# Spark


def hash_sum(columns: list[str]) -> Column:
    """Sum of xxhash64 over the given columns of every row, as an exact decimal."""
    return F.sum(F.xxhash64(*(F.col(c) for c in columns)).cast("decimal(38,0)"))


def checksum(df: DataFrame, columns: list[str] | None = None) -> Fingerprint:
    """The fingerprint of a DataFrame over `columns` (default: all of them)."""
    row = df.agg(F.count(F.lit(1)).alias("n"), hash_sum(columns or df.columns).alias("h")).collect()[0]
    return Fingerprint(row["n"], str(row["h"] or 0))


def fingerprints_by_partition(df: DataFrame, day: Column, days: list[str]) -> dict[str, Fingerprint]:
    """Each day's fingerprint over every column; a day without rows is `Fingerprint.EMPTY`."""
    rows = (
        df.groupBy(day.alias("_day"))
        .agg(F.count(F.lit(1)).alias("n"), hash_sum(df.columns).alias("h"))
        .collect()
    )
    found = {value_key(row["_day"]): Fingerprint(row["n"], str(row["h"])) for row in rows}
    return {d: found.get(d, Fingerprint.EMPTY) for d in days}


def fingerprints_and_nulls_by_partition(
    df: DataFrame, day: Column, days: list[str], columns: list[str]
) -> tuple[dict[str, Fingerprint], dict[str, int]]:
    """`fingerprints_by_partition`, and the rows where each of `columns` is null (over all days), in one pass."""
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


def dataset_table_fingerprints(
    table: DataFrame, spec: DatasetSpec, days: list[date] | list[str]
) -> dict[str, Fingerprint]:
    """Each partition's fingerprint of a dataset table over the declared columns; an empty partition's is
    `Fingerprint.EMPTY`. `days`: partition keys (or a daily dataset's days as dates)."""
    return fingerprints_by_partition(
        table.select(*spec.columns), table_partition(spec), [value_key(d) for d in days]
    )


def input_fingerprints(
    events: DataFrame, source: SourceInput, days: list[str], grain: Grain
) -> dict[str, Fingerprint]:
    """Each dataset partition's fingerprint of what it reads from one source: the events of
    [P start - lookback, P end).

    An event at time t is read by the partitions from that of t to that of t + lookback: each event is
    counted once per partition that reads it, in one aggregation.
    """
    if not days:
        return {}
    if not source.lookback:
        return fingerprints_by_partition(events, partition_of(grain, "event_time"), days)
    seconds = int(source.lookback.total_seconds())
    until = F.col("event_time") + F.expr(f"INTERVAL {seconds} SECONDS")
    if grain.unit == "day":
        reading_days = F.sequence(partition_of(grain, "event_time"), partition_of(grain, until))
    else:
        hours = F.sequence(
            F.date_trunc("hour", "event_time"), F.date_trunc("hour", until), F.expr("INTERVAL 1 HOUR")
        )
        reading_days = F.transform(hours, lambda hour: F.date_format(hour, grain.spark_key_format))
    rows = (
        events.select(F.explode(reading_days).alias("_day"), *events.columns)
        .where(F.col("_day").isin(days))
        .groupBy("_day")
        .agg(F.count(F.lit(1)).alias("n"), hash_sum(events.columns).alias("h"))
        .collect()
    )
    found = {value_key(row["_day"]): Fingerprint(row["n"], str(row["h"])) for row in rows}
    return {d: found.get(d, Fingerprint.EMPTY) for d in days}
