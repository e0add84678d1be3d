"""Figures of a table at a snapshot, computed once per process.

An Iceberg snapshot never changes, so what an aggregation found in it stays true: the shadow step
computes the shadow's bucket figures and the events' fingerprints at the snapshots it pinned, and the
promotion step of the same run (same process, in-process executor) gates and verifies against the same
snapshots without scanning them again. A figure is only reused for the exact table, catalog, snapshot,
range and spec it was computed for; anything else (another snapshot, a table without commits) is
computed afresh.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from datetime import date
from typing import TypeVar

from pyspark.sql import DataFrame, SparkSession

from backfill_platform.lakehouse.snapshots import current_snapshot_id
from backfill_platform.lakehouse.tables import in_range, read_at, table_exists
from backfill_platform.pipeline.partitions import partition_of
from backfill_platform.pipeline.tables.dataset_tables import read_range
from backfill_platform.pipeline.validation.buckets import (
    Bucket,
    BucketFigures,
    actual_figures,
    events_values,
)
from backfill_platform.pipeline.validation.fingerprints import Fingerprint, fingerprints_by_partition
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.grain import Grain

_LIMIT = 64
_CACHE: OrderedDict[Hashable, object] = OrderedDict()
T = TypeVar("T")


def _remembered(key: Hashable, compute: Callable[[], T]) -> T:
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]  # type: ignore[return-value]
    value = compute()
    _CACHE[key] = value
    while len(_CACHE) > _LIMIT:
        _CACHE.popitem(last=False)
    return value


def _catalog(spark: SparkSession) -> str:
    name = spark.conf.get("spark.sql.defaultCatalog")
    return spark.conf.get(f"spark.sql.catalog.{name}.uri", name)


def _spec_key(spec: DatasetSpec) -> str:
    return spec.model_dump_json()


def table_figures(
    spark: SparkSession, identifier: str, spec: DatasetSpec, start: date, end: date, snapshot_id: int | None
) -> dict[Bucket, BucketFigures]:
    """`actual_figures` of [start, end) of a dataset table at `snapshot_id` (None: an empty table)."""

    def compute() -> dict[Bucket, BucketFigures]:
        return actual_figures(read_range(spark, identifier, spec, start, end, snapshot_id), spec)

    if snapshot_id is None:
        return compute()
    key = ("table", _catalog(spark), identifier, int(snapshot_id), start, end, _spec_key(spec))
    return _remembered(key, compute)


def events_at(
    spark: SparkSession, identifier: str, snapshot_id: int | None, days: list[str], grain: Grain
) -> DataFrame:
    """The events of the partitions `days` (of `grain`) at `snapshot_id` (None: the table has no snapshot
    yet, so it is empty)."""
    return read_at(spark, identifier, snapshot_id).where(
        in_range("event_time", *grain.bounds(min(days), max(days)))
    )


def events_expectations(
    spark: SparkSession,
    identifier: str,
    spec: DatasetSpec,
    source: str,
    days: list[str],
    snapshot_id: int,
    grain: Grain,
) -> tuple[dict[Bucket, dict[str, int]], dict[str, Fingerprint]]:
    """What the events of `source` at `snapshot_id` imply for the dataset's buckets (the values of the
    rules aggregating that source, `buckets.events_values`), and each day's fingerprint."""
    key = ("events", _catalog(spark), identifier, int(snapshot_id), tuple(days), grain)
    events = events_at(spark, identifier, snapshot_id, days, grain)
    values, fingerprints = events_values(events, spec, source, days)
    _remembered(key, lambda: fingerprints)
    return values, fingerprints


def events_fingerprints(
    spark: SparkSession, identifier: str, days: list[str], grain: Grain
) -> dict[str, Fingerprint]:
    """Each partition's (of `grain`) fingerprint of the events table as it is now."""
    if not table_exists(spark, identifier):
        return dict.fromkeys(days, Fingerprint.EMPTY)
    snapshot_id = current_snapshot_id(spark, identifier)

    def compute() -> dict[str, Fingerprint]:
        events = events_at(spark, identifier, snapshot_id, days, grain)
        return fingerprints_by_partition(events, partition_of(grain, "event_time"), days)

    if snapshot_id is None:
        return compute()
    return _remembered(("events", _catalog(spark), identifier, int(snapshot_id), tuple(days), grain), compute)
