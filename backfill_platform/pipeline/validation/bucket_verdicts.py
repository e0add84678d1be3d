"""Pure verdicts over bucket figures: rows per bucket, reconciliation sums per bucket, a day's buckets.

A pure verdict module (`*_verdicts.py`) judges figures already computed: no Spark, no ledger, no Dagster
context. Each stage's check module (`events/checks.py`, `shadow/checks.py`, `promotion/checks.py`) reads
the figures and calls these, naming the check; the sweep runs the same verdicts on production.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import TypeVar

from dagster import TableMetadataValue

from backfill_platform.pipeline.validation.buckets import (
    Bucket,
    BucketFigures,
    failing_bucket_rows,
    failing_buckets,
)
from backfill_platform.pipeline.validation.metadata_tables import metadata_table
from backfill_platform.pipeline.validation.verdicts import PartitionVerdict
from backfill_platform.specs.dataset import DatasetSpec

T = TypeVar("T")

# How many failing buckets a verdict shows (the first, in day then hour order).
SAMPLE_BUCKETS = 20


def split_by_partition(mapping: Mapping[Bucket, T]) -> dict[str, dict[Bucket, T]]:
    """A bucket mapping split by partition, once: a year's range has thousands of buckets, and each
    partition's verdict needs only its own (filtering the whole mapping per partition would cost
    partitions x buckets)."""
    split: dict[str, dict[Bucket, T]] = defaultdict(dict)
    for bucket, value in mapping.items():
        split[bucket[0]][bucket] = value
    return split


def failed_buckets_table(bad: dict[Bucket, str], header: str) -> TableMetadataValue:
    """A verdict's failing buckets as a metadata table: the first `SAMPLE_BUCKETS`, by hour or bucket."""
    return metadata_table(*failing_bucket_rows(bad, header, SAMPLE_BUCKETS))


def row_count_verdicts(
    check: str, days: list[str], expected: dict[Bucket, BucketFigures], actual: dict[Bucket, BucketFigures]
) -> list[PartitionVerdict]:
    """Rows per bucket equal what the events imply, and the key columns are unique."""

    def problem(want: BucketFigures, got: BucketFigures) -> str | None:
        if got.rows != want.rows:
            return f"{got.rows} rows, events imply {want.rows}"
        if got.distinct_keys != got.rows:
            return f"{got.rows - got.distinct_keys} duplicate keys"
        return None

    buckets, bad = failing_buckets(expected, actual, problem)
    checked, failed = split_by_partition(dict.fromkeys(buckets)), split_by_partition(bad)
    actual_by_day, expected_by_day = split_by_partition(actual), split_by_partition(expected)
    verdicts = []
    for day in days:
        failing = failed.get(day, {})
        metadata = {
            "buckets_checked": len(checked.get(day, {})),
            "buckets_failed": len(failing),
            "rows": sum(f.rows for f in actual_by_day.get(day, {}).values()),
            "expected_rows": sum(f.rows for f in expected_by_day.get(day, {}).values()),
            "failed_buckets": failed_buckets_table(failing, "problem"),
        }
        verdicts.append(PartitionVerdict(check, day, not failing, metadata))
    return verdicts


def checksum_verdicts(
    check: str,
    spec: DatasetSpec,
    days: list[str],
    expected: dict[Bucket, BucketFigures],
    actual: dict[Bucket, BucketFigures],
) -> list[PartitionVerdict]:
    """Per-bucket sums of the aggregation columns equal the events-side sums; hash sums are recorded."""

    def problem(want: BucketFigures, got: BucketFigures) -> str | None:
        wrong = [
            f"{r.column}: shadow {got.sums.get(r.column, 0)}, events imply {want.sums.get(r.column, 0)}"
            for r in spec.reconciliation
            if got.sums.get(r.column, 0) != want.sums.get(r.column, 0)
        ]
        return "; ".join(wrong) or None

    buckets, bad = failing_buckets(expected, actual, problem)
    checked, failed = split_by_partition(dict.fromkeys(buckets)), split_by_partition(bad)
    actual_by_day = split_by_partition(actual)
    verdicts = []
    for day in days:
        failing = failed.get(day, {})
        figures = list(actual_by_day.get(day, {}).values())
        metadata = {
            "buckets_checked": len(checked.get(day, {})),
            "buckets_failed": len(failing),
            **{f"sum_{r.column}": sum(f.sums.get(r.column, 0) for f in figures) for r in spec.reconciliation},
            "key_hash_sum": str(sum(int(f.key_hash) for f in figures)),
            "row_hash_sum": str(sum(int(f.row_hash) for f in figures)),
            "failed_buckets": failed_buckets_table(failing, "difference"),
        }
        verdicts.append(PartitionVerdict(check, day, not failing, metadata))
    return verdicts
