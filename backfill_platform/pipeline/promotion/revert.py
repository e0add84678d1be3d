"""Revert a promotion: restore exactly its partitions to their contents before it, in one commit.

Unlike `rollback_to_snapshot`, which would discard every later commit, this re-writes only the days the
promotion replaced (its `backfill_platform.days` property, or its whole range for promotions recorded
before that property existed) from the snapshot before it (time travel). Later commits to other
partitions survive; a later change to the same partitions makes the revert refuse, since restoring
would silently undo it. The ledger is then derived from production's history (`reconcile_ledger`).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from backfill_platform.lakehouse.snapshots import current_snapshot_id
from backfill_platform.lakehouse.tables import in_range, replace_ranges, table_exists
from backfill_platform.pipeline.erasure.requests import requests_for
from backfill_platform.pipeline.erasure.subjects import is_requested
from backfill_platform.pipeline.ledger.commits import (
    ACTION,
    DATASET,
    DAYS,
    RANGE_END,
    RANGE_START,
    REVERTS,
    commit_days,
    day_list,
    production_commits,
)
from backfill_platform.pipeline.ledger.reconcile import reconcile_ledger
from backfill_platform.pipeline.names import production_table
from backfill_platform.pipeline.promotion.promote import fence_options
from backfill_platform.pipeline.run_tags import REASON
from backfill_platform.pipeline.tables.dataset_tables import columns_ddl, partition_ranges, read_range
from backfill_platform.pipeline.validation.fingerprints import dataset_table_fingerprints
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.stream import StreamSpec


class RevertRefused(RuntimeError):
    """The revert would not restore exactly one promotion; production is left untouched."""


@dataclass
class Revert:
    promotion_snapshot_id: int
    snapshot_id: int | None
    start: date | datetime  # days for a daily dataset, instants for an hourly one
    end: date | datetime
    rows_restored: int
    # The partitions restored (exactly the promotion's) and the rows each holds again.
    partitions: list[str] = field(default_factory=list)
    rows_by_partition: dict[str, int] = field(default_factory=dict)


def _promotion_to_revert(spec: DatasetSpec, commits: list[dict], snapshot_id: int | None) -> dict:
    reverted = {int(c["summary"][REVERTS]) for c in commits if REVERTS in c["summary"]}
    promotions = [c for c in commits if c["summary"].get(ACTION) == "promote"]
    if snapshot_id is None:
        candidates = [c for c in promotions if c["snapshot_id"] not in reverted]
        if not candidates:
            raise RevertRefused(f"{spec.name} has no promotion left to revert")
        return candidates[-1]
    promotion = next((c for c in promotions if c["snapshot_id"] == snapshot_id), None)
    if promotion is None:
        raise RevertRefused(f"snapshot {snapshot_id} is not a promotion of {spec.name}")
    if snapshot_id in reverted:
        raise RevertRefused(f"promotion {snapshot_id} of {spec.name} was already reverted")
    return promotion


def erased_rows(spark: SparkSession, spec: DatasetSpec, streams: Sequence[StreamSpec]) -> Column | None:
    """True for a row of the dataset's table that belongs to a subject with an erasure request now: the
    table holds a source stream's subject column. None when no such row can exist."""
    erased: Column | None = None
    for stream in streams:
        column = stream.subject_column
        if stream.name not in spec.stream_names or column is None or column not in spec.columns:
            continue
        requests = requests_for(spark, stream.name)
        if not requests:
            continue
        hit = is_requested(F.col(column).cast("string"), requests)
        erased = hit if erased is None else erased | hit
    return erased


def _without(df: DataFrame, erased: Column | None) -> DataFrame:
    return df if erased is None else df.where(~erased)


def revert_promotion(
    spark: SparkSession,
    spec: DatasetSpec,
    snapshot_id: int | None = None,
    reason: str = "",
    streams: Sequence[StreamSpec] = (),
) -> Revert:
    """Revert the promotion `snapshot_id` (default: the latest promotion not yet reverted).

    `streams`: the dataset's source streams. When its table holds one's subject column, rows of subjects
    requested for erasure are never restored, and are left out of the "changed since" comparison on both
    sides: a forward clean that deleted them from production is not a change the revert would undo (any
    other change to those partitions still is, exactly as before)."""
    erased = erased_rows(spark, spec, streams)
    target = production_table(spark, spec)
    if not table_exists(spark, target):
        raise RevertRefused(f"{spec.name} has no production table")
    reconcile_ledger(spark, spec)
    promotion = _promotion_to_revert(spec, production_commits(spark, target), snapshot_id)
    days = commit_days(promotion["summary"]) or []
    start, end = spec.grain.bounds(min(days), max(days))
    # Compare contents rather than trusting commit metadata: any later change to these partitions,
    # by whatever writer, would be undone by the restore.
    head = current_snapshot_id(spark, target)
    promoted = dataset_table_fingerprints(
        _without(read_range(spark, target, spec, start, end, promotion["snapshot_id"]), erased), spec, days
    )
    current = dataset_table_fingerprints(
        _without(read_range(spark, target, spec, start, end, head), erased), spec, days
    )
    changed = [day for day in promoted if promoted[day] != current[day]]
    if changed:
        raise RevertRefused(
            f"{spec.name} {changed} changed after promotion {promotion['snapshot_id']}; "
            "reverting would undo those later commits too"
        )
    ranges = partition_ranges(spec, days)
    parent = promotion["parent_id"]
    if parent is None:
        previous = spark.createDataFrame([], columns_ddl(spec))
    else:
        previous = _without(
            read_range(spark, target, spec, start, end, parent).where(
                reduce(operator.or_, (in_range(spec.partition_column, a, b) for a, b in ranges))
            ),
            erased,
        )
    restored = {day: fp.rows for day, fp in dataset_table_fingerprints(previous, spec, days).items()}
    snapshot = replace_ranges(
        previous,
        target,
        spec.partition_column,
        ranges,
        len(days),
        properties={
            ACTION: "revert",
            REVERTS: promotion["snapshot_id"],
            DATASET: spec.name,
            REASON: reason or "revert",
            RANGE_START: spec.grain.key(start),
            RANGE_END: spec.grain.key(end),
            DAYS: day_list(days),
        },
        # What was compared above is what gets replaced: a commit to those days since `head` fails this one.
        options=fence_options(head),
    )
    reconcile_ledger(spark, spec)
    shown = spec.partition_bounds(start, end)
    return Revert(
        promotion["snapshot_id"], snapshot, *shown, sum(restored.values()), sorted(restored), restored
    )
