"""The promotion gate: only shadow data that passed its blocking checks, unchanged since, is promotable.

Dagster's blocking checks skip production within the run that failed them; the gate also holds when
production is materialized alone later, or from the command line. It compares what is about to be
promoted — partition by partition, by row count and order-independent hash sum — with what the last
validation of that partition recorded in the ledger.
"""

from __future__ import annotations

from datetime import date

from pyspark.sql import DataFrame, SparkSession

from backfill_platform.ledger.ledger import latest_shadow_rows
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.validation.buckets import partition_fingerprints


class PromotionRefused(RuntimeError):
    """Promotion would publish data that was not validated; production is left untouched."""


def check_gate(
    spark: SparkSession, spec: DatasetSpec, version: str, shadow: DataFrame, days: list[date]
) -> dict[str, dict]:
    """The ledger rows that validated each day of `shadow`; raise PromotionRefused if any is missing."""
    current = partition_fingerprints(shadow, spec, days)
    validations = latest_shadow_rows(spark, spec.name, version, days)
    problems = []
    for day in (d.isoformat() for d in days):
        record = validations.get(day)
        if record is None:
            problems.append(f"{day}: the checks of shadow {version} never ran")
        elif not record["checks_passed"]:
            problems.append(
                f"{day}: blocking checks failed ({record['failed_checks']}) in run {record['run_id']}"
            )
        elif (record["shadow_rows"], record["shadow_row_hash"]) != current[day]:
            problems.append(f"{day}: the shadow changed after its validation in run {record['run_id']}")
    if problems:
        raise PromotionRefused(
            f"refusing to promote {spec.name} {version}: "
            + "; ".join(problems)
            + ". Production is unchanged."
        )
    return validations
