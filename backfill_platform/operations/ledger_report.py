"""Reports read from the ledger: what each partition (day, or hour) went through, and what a promotion
changed."""

from __future__ import annotations

from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F
from rich.table import Table

from backfill_platform.operations.ranges import partition_noun
from backfill_platform.pipeline.ledger.latest import latest_per
from backfill_platform.pipeline.ledger.ledger import ledger
from backfill_platform.pipeline.validation.divergence import Divergence


def ledger_key() -> Column:
    """A ledger row's partition key as a column (`ledger.key_of_row`: rows from before hours have only
    their date)."""
    return F.coalesce(F.col("partition_key"), F.date_format("partition_date", "yyyy-MM-dd"))


def promotion_report(spark: SparkSession, dataset: str, version: str) -> Table:
    """Per partition: archive → events → shadow → checks → production, and what the promotion replaced."""
    rows = ledger(spark, dataset).withColumn("_key", ledger_key())
    shadow = {r["_key"]: r for r in latest_per(rows.where(F.col("version") == version), "_key").collect()}
    adopted = {r["_key"]: r for r in latest_per(rows.where(F.col("adopted")), "_key").collect()}
    noun = partition_noun(shadow)
    table = Table(title=f"{dataset}: {version} backfill, per {noun} (from the ledger)")
    header = (noun, "records", "events", "dup", "quar.", "erased", "prod rows before", "shadow rows",
              "rows changed", "checks", "promoted snapshot", "reverted", "input partitions")  # fmt: skip
    for column in header:
        table.add_column(column, justify="right")
    for key in sorted(shadow):
        r, before = shadow[key], adopted.get(key)
        table.add_row(
            key, _n(r["records"]), _n(r["events_written"]), _n(r["duplicates"]), _n(r["quarantined"]),
            _n(r["erased"]), _n(before["shadow_rows"]) if before else "-", _n(r["shadow_rows"]), _n(r["diverging_rows"]),
            "passed" if r["checks_passed"] else f"[red]FAILED {r['failed_checks']}",
            str(r["promoted_snapshot_id"] or "-"), str(r["reverted_snapshot_id"] or "-"),
            r["input_partitions"] or "-",
        )  # fmt: skip
    return table


def divergence_table(title: str, divergence: Divergence) -> Table:
    """One row per partition: the candidate's rows against production's, and how they differ."""
    table = Table(title=title)
    for column in (
        partition_noun(divergence.partitions),
        "candidate rows",
        "production rows",
        "only candidate",
        "only production",
        "changed",
    ):
        table.add_column(column, justify="right")
    for key, p in sorted(divergence.partitions.items()):
        table.add_row(
            key, _n(p.candidate_rows), _n(p.production_rows), _n(p.only_in_candidate),
            _n(p.only_in_production), _n(p.changed),
        )  # fmt: skip
    return table


def _n(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"
