"""One verdict per check and day, and how a range run reports them to Dagster.

A range is validated in one run, but a user looks at one day: each check's outcome is recorded per day
(an `AssetCheckEvaluation` with that day's partition and numbers), and each day's materialization
carries that day's figures only. A day whose blocking checks failed gets no materialization at all, so
the asset's partitions, the backfill page and the declarative automation all see it as not done.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dagster import (
    AssetCheckEvaluation,
    AssetCheckSeverity,
    AssetExecutionContext,
    AssetKey,
    AssetMaterialization,
    AssetRecordsFilter,
    MaterializeResult,
    Output,
)

from backfill_platform.dagster_internals import AssetCheckEvaluationTargetMaterializationData


@dataclass(frozen=True)
class PartitionVerdict:
    """A check's outcome for one partition (a day, a local day or an hour: the asset's grain), with the
    numbers that support it."""

    check: str
    partition: str
    passed: bool
    metadata: Mapping[str, Any] = field(default_factory=dict)
    blocking: bool = True  # a failure holds the day back (severity ERROR); otherwise a warning


def failed_partitions(verdicts: Iterable[PartitionVerdict]) -> dict[str, list[str]]:
    """Partition -> the blocking checks it failed."""
    failed: dict[str, list[str]] = {}
    for v in verdicts:
        if v.blocking and not v.passed:
            failed.setdefault(v.partition, []).append(v.check)
    return failed


def digest(verdicts: Iterable[PartitionVerdict]) -> str:
    """A short fingerprint of every verdict and number, recorded on the promotion snapshot."""
    rows = [
        (
            v.check,
            v.partition,
            v.passed,
            {k: str(getattr(m, "value", m)) for k, m in v.metadata.items()},
            # Whether a failure holds the day back is part of the verdict: a warning's digest is not a
            # blocking check's. Added only for warnings, so a blocking verdict's digest is as it was.
            *(() if v.blocking else ("warning",)),
        )
        for v in verdicts
    ]
    # Ordered by check, day and outcome, then by the numbers as text: two verdicts of one check and day
    # (dicts do not compare) order alike in every run, and every other list orders as it always did.
    payload = sorted(rows, key=lambda row: (*row[:3], json.dumps(row[3:], sort_keys=True)))
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]


def partition_outcomes(
    context: AssetExecutionContext,
    key: AssetKey,
    verdicts: list[PartitionVerdict],
    day_metadata: Mapping[str, Mapping[str, Any]],
    range_metadata: Mapping[str, Any],
    per_day: bool,
    extra_days: Sequence[str] = (),
) -> Iterator[MaterializeResult | AssetMaterialization | AssetCheckEvaluation]:
    """What a range step yields: each day's materialization with its own figures, and its verdicts.

    `extra_days` are days before the run's range that the step also committed (the source days a dataset
    backfill's lookback reads): each gets its own materialization and verdicts, as a day of the range.

    All-or-nothing (the default): a day that failed a blocking check is not materialized, and the failed
    verdict fails the step once everything is reported (Dagster's blocking checks), so nothing downstream
    runs. Per day: the step succeeds so that downstream runs; every day is materialized with its verdict
    in its figures, and the platform's own gates (events validated, promotion gate) hold failed days back.
    """
    in_range = sorted(context.partition_keys)
    days = sorted({*extra_days, *in_range})
    failed = failed_partitions(verdicts)
    if per_day or not failed:
        # Outside the run's partitions, a day is materialized by an event of its own (before the output).
        for day in sorted(set(extra_days) - set(in_range)):
            yield AssetMaterialization(
                asset_key=key, partition=day, metadata={**range_metadata, **day_metadata[day]}
            )
        # Downstream steps of this run only start after an output; per-day figures ride on it.
        for day in in_range:
            context.add_asset_metadata(dict(day_metadata[day]), asset_key=key, partition_key=day)
        yield MaterializeResult(asset_key=key, metadata=dict(range_metadata))
    else:
        for day in days:
            if day not in failed:
                metadata = {**range_metadata, **day_metadata[day]}
                yield AssetMaterialization(asset_key=key, partition=day, metadata=metadata)
    selected = {check.name for check in context.selected_asset_check_keys}
    targets = judged_materializations(context, key, days)
    yield from check_evaluations(key, verdicts, selected, per_day, targets)
    yield from check_outputs(context)


def judged_materializations(
    context: AssetExecutionContext, key: AssetKey, days: Iterable[str]
) -> dict[str, AssetCheckEvaluationTargetMaterializationData]:
    """Each day's latest materialization, which its verdicts judge.

    Dagster only counts a partition's verdict for the materialization it points at (as its own
    `AssetCheckResult` does for a single partition); without it, passed days show as "missing".
    """
    days = list(days)
    run = context.instance.get_run_record_by_id(context.run.run_id)
    # One query for the range, not one per day (a year is 365): the range's materializations since the
    # run started, newest first; each day's first is its latest, judged only if this run wrote it.
    since = run.start_time if run is not None and run.start_time is not None else None
    latest: dict[str, Any] = {}
    cursor = None
    while len(latest) < len(days):
        page = context.instance.fetch_materializations(
            AssetRecordsFilter(asset_key=key, asset_partitions=days, after_timestamp=since),
            limit=max(len(days), 100),
            cursor=cursor,
        )
        for record in page.records:
            latest.setdefault(record.partition_key, record)
        if not page.has_more:
            break
        cursor = page.cursor
    return {
        day: AssetCheckEvaluationTargetMaterializationData(
            storage_id=record.storage_id, run_id=record.event_log_entry.run_id, timestamp=record.timestamp
        )
        for day, record in latest.items()
        if record.event_log_entry.run_id == context.run.run_id
    }


def check_evaluations(
    key: AssetKey,
    verdicts: list[PartitionVerdict],
    selected: set[str],
    per_day: bool,
    targets: Mapping[str, AssetCheckEvaluationTargetMaterializationData],
) -> Iterator[AssetCheckEvaluation]:
    for v in verdicts:
        if v.check in selected:
            yield AssetCheckEvaluation(
                asset_key=key,
                check_name=v.check,
                partition=v.partition,
                passed=v.passed,
                severity=AssetCheckSeverity.ERROR if v.blocking else AssetCheckSeverity.WARN,
                blocking=v.blocking and not per_day,
                metadata=dict(v.metadata),
                target_materialization_data=targets.get(v.partition),
            )


def check_outputs(context: AssetExecutionContext) -> Iterator[Output]:
    """Close each check's step output. The verdicts are the per-day evaluations above; without these,
    Dagster logs that every blocking check "emitted no result" (it gates on the evaluations anyway)."""
    for check in context.selected_asset_check_keys:
        yield Output(None, output_name=f"{check.asset_key.to_python_identifier()}_{check.name}")
