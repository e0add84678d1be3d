"""Per-bucket figures of a dataset table, and what the events say they must be.

A bucket is one hour of one event-time day, or the whole day for a dataset declared `bucket: day`
(`DatasetSpec.bucket_columns`). The expectation comes from the events table through the
dataset spec's rules (rows per bucket, and for each aggregation column the events-side sum it must
equal), never from the transform under test. The actual figures also carry order-independent hash sums
of the key columns and of whole rows, so two tables or two runs can be compared bucket by bucket.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F
from sqlglot import exp

from backfill_platform.pipeline.partitions import partition_of
from backfill_platform.pipeline.tables.dataset_tables import table_partition
from backfill_platform.pipeline.validation.fingerprints import Fingerprint, from_sums, hash_sum
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.expressions import (
    ExpressionError,
    checked_aggregate,
    checked_condition,
    parse_checked,
)
from backfill_platform.specs.grain import Grain, value_key

# (partition key, hour); the hour is None when the partition (a day, or an hour) is the bucket
Bucket = tuple[str, int | None]


@dataclass
class BucketFigures:
    rows: int = 0
    distinct_keys: int = 0
    sums: dict[str, int] = field(default_factory=dict)
    key_hash: str = "0"
    row_hash: str = "0"
    # Rows whose key column is null (schema check), per key column; only for table figures.
    null_keys: dict[str, int] = field(default_factory=dict)


def bucket_label(bucket: Bucket) -> int | str:
    """How a bucket is shown within its day's check: its hour, or 'whole day'."""
    if bucket[1] is not None:
        return bucket[1]
    return "whole day" if Grain.of_key(bucket[0]).unit == "day" else "whole hour"


def _events_bucket(spec: DatasetSpec) -> list[Column]:
    """The bucket of an event, column for column as `spec.bucket_columns` names it in the table."""
    day_and_hour = [partition_of(spec.grain, "event_time"), F.hour("event_time")]
    return [c.alias(f"_b{i}") for i, c in enumerate(day_and_hour[: len(spec.bucket_columns)])]


def _table_bucket(spec: DatasetSpec) -> list[Column]:
    hour = spec.bucket_columns[1:]  # the first is the partition column
    return [
        table_partition(spec).alias("_b0"),
        *(F.col(c).alias(f"_b{i}") for i, c in enumerate(hour, start=1)),
    ]


def _bucket_of(row: Row, spec: DatasetSpec) -> Bucket:
    hour = row["_b1"] if len(spec.bucket_columns) > 1 else None
    return value_key(row["_b0"]), None if hour is None else int(hour)


def _filtered(expression: str, condition: str) -> str:
    """`expression` with every outermost aggregate restricted to the rows matching `condition`
    (`count(1)` -> `count(1) FILTER (WHERE condition)`), so rules with different filters share a pass.
    Both are checked and re-rendered snippets (`specs.expressions`); the result is built as a tree."""
    tree = parse_checked(expression)
    where = parse_checked(condition)
    outermost = [n for n in tree.find_all(exp.AggFunc) if n.find_ancestor(exp.AggFunc) is None]
    if not outermost:
        raise ValueError(f"{expression!r} is not an aggregate")
    for node in outermost:
        replacement = exp.Filter(this=node.copy(), expression=exp.Where(this=where.copy()))
        if node is tree:
            tree = replacement
        else:
            node.replace(replacement)
    return tree.sql("spark", comments=False)


def _checked_rules(
    by_filter: dict[str, list[tuple[str, str]]], columns: list[str]
) -> dict[str, list[tuple[str, str]]]:
    """The rules with every snippet checked against the events' columns and re-rendered: Spark only ever
    gets the checked text, whether the spec came from a file (checked at load too) or from code."""
    checked: dict[str, list[tuple[str, str]]] = defaultdict(list)
    try:
        for condition, rules in by_filter.items():
            checked[checked_condition(condition, columns)] += [
                (alias, checked_aggregate(expression, columns)) for alias, expression in rules
            ]
    except ExpressionError as exc:
        raise ValueError(f"a rule of the dataset is refused: {exc}") from None
    return checked


def events_figures(
    events: DataFrame, spec: DatasetSpec, days: list[str]
) -> tuple[dict[Bucket, BucketFigures], dict[str, Fingerprint]]:
    """Rows and reconciliation sums per bucket as the events of a one-source dataset imply them, and the
    events' per-day fingerprints (over every column), in one aggregation over the events."""
    values, fingerprints = events_values(events, spec, spec.primary_stream, days)
    return expectations_from(values, spec), fingerprints


def events_values(
    events: DataFrame, spec: DatasetSpec, source: str, days: list[str]
) -> tuple[dict[Bucket, dict[str, int]], dict[str, Fingerprint]]:
    """The values of the rules that aggregate `source` (the expected rows as `_rows`, each
    reconciliation rule under its column) per bucket of `events`, and their per-day fingerprints.

    Each filter's aggregates are computed with `FILTER (WHERE …)` beside a count of the rows it
    matches; a bucket is expected (and a filter's values set) exactly when that count is not zero:
    a bucket with no matching event is not expected at all, rather than expected with zero rows.
    """
    by_filter: dict[str, list[tuple[str, str]]] = defaultdict(list)
    if spec.source_of(spec.expected_rows) == source:
        by_filter[spec.expected_rows.filter].append(("_rows", spec.expected_rows.expression))
    for rule in spec.reconciliation:
        if spec.source_of(rule) == source:
            by_filter[rule.filter].append((rule.column, rule.expression))
    by_filter = _checked_rules(by_filter, events.columns)
    aggregates = [F.count(F.lit(1)).alias("_all"), hash_sum(events.columns).alias("_hash")]
    for i, (condition, rules) in enumerate(by_filter.items()):
        aggregates.append(F.expr(_filtered("count(1)", condition)).alias(f"_matched{i}"))
        aggregates += [F.expr(_filtered(expression, condition)).alias(alias) for alias, expression in rules]
    values: dict[Bucket, dict[str, int]] = defaultdict(dict)
    rows: dict[str, int] = defaultdict(int)
    hashes: dict[str, int] = defaultdict(int)
    for row in events.groupBy(*_events_bucket(spec)).agg(*aggregates).collect():
        bucket = _bucket_of(row, spec)
        rows[bucket[0]] += row["_all"]
        hashes[bucket[0]] += int(row["_hash"] or 0)
        for i, rules in enumerate(by_filter.values()):
            if row[f"_matched{i}"]:
                values[bucket].update({alias: int(row[alias] or 0) for alias, _ in rules})
    return values, from_sums(rows, hashes, days)


def expectations_from(values: dict[Bucket, dict[str, int]], spec: DatasetSpec) -> dict[Bucket, BucketFigures]:
    """The expected figures of every bucket some rule's events reached (values of every source merged)."""
    return {
        bucket: BucketFigures(
            rows=v.get("_rows", 0), sums={r.column: v.get(r.column, 0) for r in spec.reconciliation}
        )
        for bucket, v in values.items()
    }


def actual_figures(table: DataFrame, spec: DatasetSpec) -> dict[Bucket, BucketFigures]:
    """Rows, distinct keys, column sums, hash sums and null keys per bucket of a dataset table.

    One aggregation, one Spark job: the per-day fingerprints (`fingerprints.fingerprints_from_buckets`) and the
    schema check's null counts (`null_keys_of`) are derived from it rather than computed by passes of their
    own.
    """
    rows = (
        table.groupBy(*_table_bucket(spec))
        .agg(
            F.count(F.lit(1)).alias("_rows"),
            F.count_distinct(*(F.col(c) for c in spec.key_columns)).alias("_keys"),
            *(F.coalesce(F.sum(r.column), F.lit(0)).alias(r.column) for r in spec.reconciliation),
            hash_sum(spec.key_columns).alias("_key_hash"),
            hash_sum(list(spec.columns)).alias("_row_hash"),
            *(F.count(F.when(F.col(c).isNull(), 1)).alias(f"_null_{c}") for c in spec.key_columns),
        )
        .collect()
    )
    return {
        _bucket_of(row, spec): BucketFigures(
            rows=row["_rows"],
            distinct_keys=row["_keys"],
            sums={r.column: int(row[r.column]) for r in spec.reconciliation},
            key_hash=str(row["_key_hash"]),
            row_hash=str(row["_row_hash"]),
            null_keys={c: int(row[f"_null_{c}"]) for c in spec.key_columns},
        )
        for row in rows
    }


def null_keys_of(figures: dict[Bucket, BucketFigures], spec: DatasetSpec) -> dict[str, int]:
    """Rows with a null key column, per key column, over every bucket."""
    return {c: sum(f.null_keys.get(c, 0) for f in figures.values()) for c in spec.key_columns}


def failing_buckets(
    expected: dict[Bucket, BucketFigures],
    actual: dict[Bucket, BucketFigures],
    problem: Callable[[BucketFigures, BucketFigures], str | None],
) -> tuple[set[Bucket], dict[Bucket, str]]:
    """Every bucket either side has, and those where `problem(expected, actual)` names a difference."""
    buckets = set(expected) | set(actual)
    bad = {}
    for bucket in sorted(buckets, key=lambda b: (b[0], -1 if b[1] is None else b[1])):
        found = problem(expected.get(bucket, BucketFigures()), actual.get(bucket, BucketFigures()))
        if found:
            bad[bucket] = found
    return buckets, bad


def failing_bucket_rows(bad: dict[Bucket, str], header: str, limit: int) -> tuple[list[str], list[list]]:
    """(header, rows) of the first `limit` failing buckets of a day: its hours, or the whole day."""
    rows = [[bucket_label(b), problem] for b, problem in list(bad.items())[:limit]]
    first = "hour" if all(b[1] is not None for b in bad) else "bucket"
    return [first, header], rows
