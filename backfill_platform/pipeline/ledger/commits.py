"""Production's commit history: the one source of truth for what was promoted, reverted and adopted.

Promotion, revert and adopt each change production in one Iceberg commit whose snapshot properties say
what it did (action, days, version, the validation runs it published, what it reverts) and who and why
(`run_tags`: run id, backfill id, reason, ticket). The ledger's
promotion facts are derived from these properties (`ledger.reconcile`), so a process that dies between
the production commit and its ledger write leaves nothing the next run cannot repair. This module is
that shared vocabulary and its reading; it knows nothing of Spark jobs or Dagster.
"""

from __future__ import annotations

import json
from datetime import date

from pyspark.sql import SparkSession

from backfill_platform.lakehouse.snapshots import main_lineage
from backfill_platform.pipeline.partitions import days_between

ACTION = "backfill_platform.action"
DATASET = "backfill_platform.dataset"
VERSION = "backfill_platform.dataset-version"
# The range asked for. The days actually replaced are DAYS when present (a per-day promotion may hold
# some days of the range back); commits written before DAYS existed replaced the whole range.
RANGE_START = "backfill_platform.range-start"
RANGE_END = "backfill_platform.range-end"
DAYS = "backfill_platform.days"
HELD_BACK = "backfill_platform.held-back-days"
PROVISIONAL_DAYS = "backfill_platform.provisional-days"
# JSON {day: ledger run_id}: the validation (ledger row) each promoted day was published from.
VALIDATION_RUNS = "backfill_platform.validation-runs"
REVERTS = "backfill_platform.reverts-snapshot-id"
# A promotion: the shadow snapshot it published, and a digest of its validations' verdicts.
SHADOW_SNAPSHOT = "backfill_platform.shadow-snapshot-id"
CHECK_DIGEST = "backfill_platform.check-digest"
# An adoption: the table it adopted (never validated by the platform) and who adopted it.
ADOPTED_FROM = "backfill_platform.adopted-from"
VALIDATED = "backfill_platform.validated"
ADOPTED_BY = "backfill_platform.adopted-by"


def production_commits(spark: SparkSession, identifier: str) -> list[dict]:
    """Snapshots of the main branch, oldest first, with their summaries and commit times."""
    return main_lineage(spark, identifier)


def commit_days(summary: dict[str, str]) -> list[str] | None:
    """The partition keys (days, or hours) a platform commit replaced (None for commits of other
    writers). Commits from before DAYS was recorded replaced their range's days."""
    if summary.get(DAYS):
        return summary[DAYS].split(",")
    if RANGE_START in summary:
        first, end = date.fromisoformat(summary[RANGE_START]), date.fromisoformat(summary[RANGE_END])
        return [day.isoformat() for day in days_between(first, end)]
    return None


def day_list(days: list[date] | list[str]) -> str:
    """The DAYS property value: sorted ISO days, comma-separated."""
    return ",".join(sorted(d if isinstance(d, str) else d.isoformat() for d in days))


def validation_runs(summary: dict[str, str]) -> dict[str, str] | None:
    """{day: ledger run_id} of a promotion, or None for promotions written before it was recorded."""
    if VALIDATION_RUNS not in summary:
        return None
    return dict(json.loads(summary[VALIDATION_RUNS]))


def encode_validation_runs(runs: dict[str, str]) -> str:
    return json.dumps(dict(sorted(runs.items())), separators=(",", ":"))
