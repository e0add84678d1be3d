"""Revert a promotion: restore exactly its partitions to their contents before it, in one commit.

Unlike `rollback_to_snapshot`, which would discard every later commit, this re-writes only the promoted
range from the snapshot before the promotion (time travel). Later commits to other partitions survive;
a later change to the same partitions makes the revert refuse, since restoring would silently undo it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from backfill_platform.lakehouse.tables import current_snapshot_id, replace_range, table_exists
from backfill_platform.ledger.ledger import ledger, now, update_rows
from backfill_platform.partitions import days_between
from backfill_platform.promotion.promote import ACTION, RANGE_END, RANGE_START, fence_options
from backfill_platform.shadow.tables import columns_ddl, production_table, read_range
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.validation.buckets import partition_fingerprints

REVERTS = "backfill_platform.reverts-snapshot-id"


class RevertRefused(RuntimeError):
    """The revert would not restore exactly one promotion; production is left untouched."""


@dataclass
class Revert:
    promotion_snapshot_id: int
    snapshot_id: int | None
    start: date
    end: date
    rows_restored: int


def production_commits(spark: SparkSession, identifier: str) -> list[dict]:
    """Snapshots of the main branch, oldest first, with their summaries."""
    rows = spark.sql(
        f"SELECT s.snapshot_id, s.parent_id, s.committed_at, s.summary FROM {identifier}.snapshots s "
        f"JOIN {identifier}.history h ON s.snapshot_id = h.snapshot_id "
        "WHERE h.is_current_ancestor ORDER BY s.committed_at, s.snapshot_id"
    ).collect()
    return [row.asDict() for row in rows]


def _range(summary: dict) -> tuple[date, date] | None:
    if RANGE_START not in summary:
        return None
    return date.fromisoformat(summary[RANGE_START]), date.fromisoformat(summary[RANGE_END])


def revert_promotion(
    spark: SparkSession, spec: DatasetSpec, snapshot_id: int | None = None, reason: str = ""
) -> Revert:
    """Revert the promotion `snapshot_id` (default: the latest promotion not yet reverted)."""
    target = production_table(spark, spec)
    if not table_exists(spark, target):
        raise RevertRefused(f"{spec.name} has no production table")
    commits = production_commits(spark, target)
    reverted = {int(c["summary"][REVERTS]) for c in commits if REVERTS in c["summary"]}
    promotions = [c for c in commits if c["summary"].get(ACTION) == "promote"]
    if snapshot_id is None:
        candidates = [c for c in promotions if c["snapshot_id"] not in reverted]
        if not candidates:
            raise RevertRefused(f"{spec.name} has no promotion left to revert")
        promotion = candidates[-1]
    else:
        promotion = next((c for c in promotions if c["snapshot_id"] == snapshot_id), None)
        if promotion is None:
            raise RevertRefused(f"snapshot {snapshot_id} is not a promotion of {spec.name}")
        if snapshot_id in reverted:
            raise RevertRefused(f"promotion {snapshot_id} of {spec.name} was already reverted")
    start, end = _range(promotion["summary"])
    # Compare contents rather than trusting commit metadata: any later change to these partitions,
    # by whatever writer, would be undone by the restore.
    days = days_between(start, end)
    head = current_snapshot_id(spark, target)
    promoted = partition_fingerprints(
        read_range(spark, target, spec, start, end, promotion["snapshot_id"]), spec, days
    )
    current = partition_fingerprints(read_range(spark, target, spec, start, end, head), spec, days)
    changed = [day for day in promoted if promoted[day] != current[day]]
    if changed:
        raise RevertRefused(
            f"{spec.name} {changed} changed after promotion {promotion['snapshot_id']}; "
            "reverting would undo those later commits too"
        )
    parent = promotion["parent_id"]
    if parent is None:
        previous = spark.createDataFrame([], columns_ddl(spec))
    else:
        previous = read_range(spark, target, spec, start, end, parent)
    snapshot = replace_range(
        previous,
        target,
        spec.partition_column,
        start,
        end,
        properties={
            ACTION: "revert",
            REVERTS: promotion["snapshot_id"],
            "backfill_platform.dataset": spec.name,
            "reason": reason or "revert",
            RANGE_START: start.isoformat(),
            RANGE_END: end.isoformat(),
        },
        # What was compared above is what gets replaced: a commit to the range since `head` fails this one.
        options=fence_options(head),
    )
    ledger_rows = (
        ledger(spark, spec.name)
        .where(F.col("promoted_snapshot_id") == promotion["snapshot_id"])
        .select("version", "partition", "run_id")
        .collect()
    )
    update_rows(
        spark,
        spec.name,
        [(r["version"], r["partition"], r["run_id"]) for r in ledger_rows],
        {"reverted_snapshot_id": snapshot, "reverted_at": now()},
    )
    return Revert(promotion["snapshot_id"], snapshot, start, end, previous.count())
