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
from backfill_platform.specs.grain import Grain

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
# JSON {ledger run_id: partitions}: the validation (ledger rows) each promoted partition was published
# from, the partitions written as DAYS is. Promotions recorded before hours wrote {day: run_id} under
# VALIDATION_RUNS_BY_DAY instead; both are read.
VALIDATION_RUNS = "backfill_platform.validation-run-partitions"
VALIDATION_RUNS_BY_DAY = "backfill_platform.validation-runs"
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
        return parse_day_list(summary[DAYS])
    if RANGE_START in summary:
        first, end = date.fromisoformat(summary[RANGE_START]), date.fromisoformat(summary[RANGE_END])
        return [day.isoformat() for day in days_between(first, end)]
    return None


# A run of at least this many consecutive partitions is written `first..last`: a year of hours is one
# range, not 8,760 keys in every snapshot's summary (Iceberg keeps them all in the table's metadata).
RANGE_FROM = 3


def day_list(days: list[date] | list[str]) -> str:
    """The DAYS property value: sorted partition keys, comma-separated, runs of RANGE_FROM or more
    consecutive ones written `first..last` (`2026-10-01..2026-10-31,2026-11-03`)."""
    keys = sorted({d if isinstance(d, str) else d.isoformat() for d in days})
    runs: list[list[str]] = []
    for key in keys:
        if runs and Grain.of_key(key).shift(runs[-1][-1], 1) == key:
            runs[-1].append(key)
        else:
            runs.append([key])
    return ",".join(f"{run[0]}..{run[-1]}" if len(run) >= RANGE_FROM else ",".join(run) for run in runs)


def parse_day_list(text: str) -> list[str]:
    """The partition keys of a DAYS-like property value (`day_list`), ranges expanded."""
    keys: list[str] = []
    for token in filter(None, text.split(",")):
        first, _, last = token.partition("..")
        key = first
        keys.append(key)
        while last and key != last:
            key = Grain.of_key(first).shift(key, 1)
            keys.append(key)
    return keys


def validation_runs(summary: dict[str, str]) -> dict[str, str] | None:
    """{partition key: ledger run_id} of a promotion, or None for promotions written before it was
    recorded."""
    if VALIDATION_RUNS in summary:
        grouped = json.loads(summary[VALIDATION_RUNS])
        return {key: run for run, keys in grouped.items() for key in parse_day_list(keys)}
    if VALIDATION_RUNS_BY_DAY in summary:
        return dict(json.loads(summary[VALIDATION_RUNS_BY_DAY]))
    return None


def encode_validation_runs(runs: dict[str, str]) -> str:
    """The VALIDATION_RUNS value of {partition key: run_id}: each run's partitions as `day_list`."""
    by_run: dict[str, list[str]] = {}
    for key, run in runs.items():
        by_run.setdefault(run, []).append(key)
    return json.dumps({run: day_list(keys) for run, keys in sorted(by_run.items())}, separators=(",", ":"))
