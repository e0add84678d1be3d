"""Derive the ledger's promotion facts from production's commit history, and repair them idempotently.

Promotion, revert and adopt commit to production first and write the ledger second: two commits, and a
process can die between them. Rather than hoping it does not, production's snapshot properties carry
every fact the ledger records about them (see `ledger.commits`), and `reconcile_ledger` replays the
main branch's history onto the ledger rows: which validation each promotion published, which promotion
a revert undid, which days were adopted. It is the ledger write of promote/revert/adopt itself (so the
crash-recovery path is the everyday path), it runs before each of them and in `backfill-platform
ledger`, and it commits nothing when the ledger already agrees.

Only identities are compared (snapshot ids, run ids); timestamps follow them and are the commit times.
"""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime

from pyspark.sql import SparkSession

from backfill_platform.lakehouse.tables import table_exists
from backfill_platform.pipeline.ledger.commits import (
    ACTION,
    ADOPTED_BY,
    REVERTS,
    VERSION,
    commit_days,
    production_commits,
    validation_runs,
)
from backfill_platform.pipeline.ledger.ledger import (
    LedgerRow,
    ddl,
    ensure_ledger,
    key_of_row,
    ledger,
    ledger_table,
    partition_date,
)
from backfill_platform.pipeline.names import production_table
from backfill_platform.pipeline.run_tags import REASON, RUN_ID
from backfill_platform.pipeline.tables.dataset_tables import read_range
from backfill_platform.pipeline.validation.fingerprints import dataset_table_fingerprints
from backfill_platform.specs.dataset import DatasetSpec

Key = tuple[str, str, str]  # (version, partition key, run_id) of a ledger row
FACTS = ("promoted_snapshot_id", "promotion_run_id", "reverted_snapshot_id")
ADOPTED = "adopted"


@dataclass
class Fact:
    """What production's history says about one ledger row."""

    promoted_snapshot_id: int
    promoted_at: datetime
    promotion_run_id: str | None
    reverted_snapshot_id: int | None = None
    reverted_at: datetime | None = None


@dataclass
class Reconciliation:
    """The ledger rows a reconciliation corrected or added (both empty: the ledger already agreed)."""

    updated: list[Key] = field(default_factory=list)
    inserted: list[Key] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.updated or self.inserted)


def promotion_facts(commits: list[dict], existing: dict[Key, dict]) -> dict[Key, Fact]:
    """Replay the main branch, oldest first: a promotion sets its rows, a revert marks the rows of the
    promotion it undid. Promotions from before `validation-runs` was recorded name no rows: theirs are
    the rows the ledger already attributes to them."""
    facts: dict[Key, Fact] = {}
    named: dict[int, list[Key]] = {}
    for commit in commits:
        summary, snapshot = commit["summary"], commit["snapshot_id"]
        if summary.get(ACTION) == "promote":
            runs = validation_runs(summary)
            if runs is None:
                keys = [k for k, row in existing.items() if row["promoted_snapshot_id"] == snapshot]
            else:
                keys = [(summary[VERSION], d, run) for d, run in runs.items()]
            named[snapshot] = keys
            for key in keys:
                facts[key] = Fact(snapshot, commit["committed_at"], summary.get(RUN_ID))
        elif summary.get(ACTION) == "revert" and REVERTS in summary:
            for key in named.get(int(summary[REVERTS]), []):
                if key in facts and facts[key].reverted_snapshot_id is None:
                    facts[key].reverted_snapshot_id = snapshot
                    facts[key].reverted_at = commit["committed_at"]
    return facts


def reconcile_ledger(spark: SparkSession, spec: DatasetSpec) -> Reconciliation:
    """Make the ledger rows of `spec` say what production's history says, in at most one MERGE."""
    target = production_table(spark, spec)
    if not table_exists(spark, target):
        return Reconciliation()
    ensure_ledger(spark)
    commits = production_commits(spark, target)
    existing = {
        (r["version"], key_of_row(r.asDict()), r["run_id"]): r.asDict()
        for r in ledger(spark, spec.name)
        .select(
            "version",
            "partition_date",
            "partition_key",
            "run_id",
            "recorded_at",
            "stream",
            *FACTS,
            "promoted_at",
            "reverted_at",
        )
        .collect()
    }
    result = Reconciliation()
    rows: list[tuple[LedgerRow, bool]] = []
    for key, fact in sorted(promotion_facts(commits, existing).items()):
        row = existing.get(key)
        # A validation row that is gone cannot be rebuilt from snapshot properties: left as it is.
        if row is None or tuple(row[f] for f in FACTS) == tuple(getattr(fact, f) for f in FACTS):
            continue
        result.updated.append(key)
        version, partition_key, run_id = key
        fixed = LedgerRow(
            spec.name,
            version,
            partition_date(partition_key),
            run_id,
            recorded_at=row["recorded_at"],
            stream=row["stream"],
            partition_key=partition_key,
            **asdict(fact),
        )
        rows.append((fixed, False))
    for commit in commits:
        if commit["summary"].get(ACTION) == "adopt":
            for adopted in adopted_rows(spark, spec, commit, existing):
                result.inserted.append((ADOPTED, adopted.partition_key or "", adopted.run_id))
                rows.append((adopted, True))
    if rows:
        merge(spark, rows)
    return result


def adopted_rows(
    spark: SparkSession, spec: DatasetSpec, commit: dict, existing: dict[Key, dict]
) -> list[LedgerRow]:
    """The ledger rows of an adoption that are missing, with the fingerprints production holds at it."""
    snapshot, summary = commit["snapshot_id"], commit["summary"]
    run_id = f"adopt-{snapshot}"
    days = [d for d in commit_days(summary) or [] if (ADOPTED, d, run_id) not in existing]
    if not days:
        return []
    start, end = spec.grain.bounds(min(days), max(days))
    pinned = read_range(spark, production_table(spark, spec), spec, start, end, snapshot)
    fingerprints = dataset_table_fingerprints(pinned, spec, days)
    return [
        LedgerRow(
            dataset=spec.name,
            version=ADOPTED,
            partition_date=partition_date(day),
            partition_key=day,
            run_id=run_id,
            recorded_at=commit["committed_at"],
            stream=spec.primary_stream,
            reason=summary.get(REASON),
            **fingerprints[day].columns("shadow"),
            adopted=True,
            promoted_snapshot_id=snapshot,
            promoted_at=commit["committed_at"],
            promotion_run_id=summary.get(ADOPTED_BY),
        )
        for day in days
    ]


def merge(spark: SparkSession, rows: list[tuple[LedgerRow, bool]]) -> None:
    """One MERGE commit: set the promotion facts of existing rows, insert the missing adopted ones."""
    source = spark.createDataFrame(
        [(*asdict(row).values(), insert) for row, insert in rows], f"{ddl(LedgerRow)}, _insert boolean"
    )
    view = f"_ledger_repair_{uuid.uuid4().hex}"
    source.createOrReplaceTempView(view)
    columns = [c for c in source.columns if c != "_insert"]
    updates = ", ".join(f"t.{c} = s.{c}" for c in (*FACTS, "promoted_at", "reverted_at"))
    try:
        spark.sql(
            f"MERGE INTO {ledger_table(spark)} t USING {view} s "
            # Rows recorded before hours have no partition_key: theirs is their date.
            "ON t.dataset = s.dataset AND t.version = s.version AND t.partition_date = s.partition_date "
            "AND coalesce(t.partition_key, cast(t.partition_date AS string)) = s.partition_key "
            "AND t.run_id = s.run_id "
            f"WHEN MATCHED AND NOT s._insert THEN UPDATE SET {updates} "
            f"WHEN NOT MATCHED AND s._insert THEN INSERT ({', '.join(columns)}) "
            f"VALUES ({', '.join(f's.{c}' for c in columns)})"
        )
    finally:
        spark.catalog.dropTempView(view)
