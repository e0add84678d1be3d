"""Reports read from the ledger: what each day went through, and what a promotion changed."""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from rich.table import Table

from backfill_platform.pipeline.ledger.latest import latest_per
from backfill_platform.pipeline.ledger.ledger import ledger
from backfill_platform.pipeline.validation.divergence import Divergence


def promotion_report(spark: SparkSession, dataset: str, version: str) -> Table:
    """Per day: archive → events → shadow → checks → production, and what the promotion replaced."""
    rows = ledger(spark, dataset)
    shadow = {
        r["partition"]: r for r in latest_per(rows.where(F.col("version") == version), "partition").collect()
    }
    adopted = {r["partition"]: r for r in latest_per(rows.where(F.col("adopted")), "partition").collect()}
    table = Table(title=f"{dataset}: {version} backfill, per day (from the ledger)")
    header = ("day", "records", "events", "dup", "quar.", "prod rows before", "shadow rows", "rows changed",
              "checks", "promoted snapshot", "reverted")  # fmt: skip
    for column in header:
        table.add_column(column, justify="right")
    for day in sorted(shadow):
        r, before = shadow[day], adopted.get(day)
        table.add_row(
            day.isoformat(), _n(r["records"]), _n(r["events_written"]), _n(r["duplicates"]), _n(r["quarantined"]),
            _n(before["shadow_rows"]) if before else "-", _n(r["shadow_rows"]), _n(r["diverging_rows"]),
            "passed" if r["checks_passed"] else f"[red]FAILED {r['failed_checks']}",
            str(r["promoted_snapshot_id"] or "-"), str(r["reverted_snapshot_id"] or "-"),
        )  # fmt: skip
    return table


def divergence_table(title: str, divergence: Divergence) -> Table:
    table = Table(title=title)
    for column in (
        "day",
        "candidate rows",
        "production rows",
        "only candidate",
        "only production",
        "changed",
    ):
        table.add_column(column, justify="right")
    for day, p in sorted(divergence.partitions.items()):
        table.add_row(
            day, _n(p.candidate_rows), _n(p.production_rows), _n(p.only_in_candidate),
            _n(p.only_in_production), _n(p.changed),
        )  # fmt: skip
    return table


def _n(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"
