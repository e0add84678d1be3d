"""Blocking checks of a shadow range: row counts and checksums per bucket, schema, divergence.

Every check reports per partition, so a partition is promotable only when no blocking check failed for
it; each result carries its numbers as metadata for the UI.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from dagster import AssetCheckResult, AssetCheckSeverity, AssetKey, MetadataValue
from pyspark.sql import DataFrame

from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.validation.buckets import (
    Bucket,
    BucketFigures,
    actual_figures,
    expected_from_events,
    failing_buckets,
)
from backfill_platform.validation.divergence import Divergence, compare
from backfill_platform.validation.markdown import markdown_table
from backfill_platform.validation.schema import pandera_schema, validate_schema

ROW_COUNTS = "row_counts_per_bucket"
CHECKSUMS = "checksums_per_bucket"
SCHEMA = "schema"
DIVERGENCE = "divergence_vs_production"
EVENTS_VALIDATED = "events_validated"
MAX_DIVERGENCE_TAG = "backfill_platform/max_divergence_ratio"
SAMPLE_BUCKETS = 20


@dataclass
class ShadowValidation:
    days: list[str]
    results: list[AssetCheckResult] = field(default_factory=list)
    failed: dict[str, list[str]] = field(default_factory=dict)  # day -> blocking checks that failed
    actual: dict[Bucket, BucketFigures] = field(default_factory=dict)
    divergence: Divergence | None = None

    def fail(self, check: str, days: list[str]) -> None:
        for day in days:
            self.failed.setdefault(day, []).append(check)

    def passed(self, day: str) -> bool:
        return not self.failed.get(day)

    @property
    def digest(self) -> str:
        """A short fingerprint of every verdict and number, recorded on the promotion snapshot."""
        payload = [
            (r.check_name, r.passed, {k: str(v.value) for k, v in r.metadata.items()}) for r in self.results
        ]
        return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _per_partition(days: list[str], bad: dict[Bucket, str], checked: set[Bucket]) -> list[list[object]]:
    return [[day, sum(1 for b in checked if b[0] == day), sum(1 for b in bad if b[0] == day)] for day in days]


def row_count_check(key: AssetKey, days, expected, actual, validation: ShadowValidation) -> AssetCheckResult:
    """Rows per bucket equal what the events imply, and the key columns are unique."""

    def problem(want: BucketFigures, got: BucketFigures) -> str | None:
        if got.rows != want.rows:
            return f"{got.rows} rows, events imply {want.rows}"
        if got.distinct_keys != got.rows:
            return f"{got.rows - got.distinct_keys} duplicate keys"
        return None

    buckets, bad = failing_buckets(expected, actual, problem)
    validation.fail(ROW_COUNTS, sorted({b[0] for b in bad}))
    return AssetCheckResult(
        asset_key=key,
        check_name=ROW_COUNTS,
        passed=not bad,
        severity=AssetCheckSeverity.ERROR,
        description="rows per hour bucket equal the events-side expectation; keys unique",
        metadata={
            "buckets_checked": len(buckets),
            "buckets_failed": len(bad),
            "rows": sum(f.rows for f in actual.values()),
            "expected_rows": sum(f.rows for f in expected.values()),
            "by_partition": MetadataValue.md(
                markdown_table(["partition", "buckets", "failed"], _per_partition(days, bad, buckets))
            ),
            "failed_buckets": MetadataValue.md(
                markdown_table(
                    ["day", "hour", "problem"],
                    [[d, h, p] for (d, h), p in list(bad.items())[:SAMPLE_BUCKETS]],
                )
            ),
        },
    )


def checksum_check(key: AssetKey, spec: DatasetSpec, days, expected, actual, validation) -> AssetCheckResult:
    """Per-bucket sums of the aggregation columns equal the events-side sums; hash sums are recorded."""

    def problem(want: BucketFigures, got: BucketFigures) -> str | None:
        wrong = [
            f"{r.column} {got.sums.get(r.column, 0)} vs {want.sums.get(r.column, 0)}"
            for r in spec.reconciliation
            if got.sums.get(r.column, 0) != want.sums.get(r.column, 0)
        ]
        return "; ".join(wrong) or None

    buckets, bad = failing_buckets(expected, actual, problem)
    validation.fail(CHECKSUMS, sorted({b[0] for b in bad}))
    totals = {r.column: sum(f.sums.get(r.column, 0) for f in actual.values()) for r in spec.reconciliation}
    key_hash = sum(int(f.key_hash) for f in actual.values())
    return AssetCheckResult(
        asset_key=key,
        check_name=CHECKSUMS,
        passed=not bad,
        severity=AssetCheckSeverity.ERROR,
        description="per-bucket sums reconcile with the events; order-independent hash sums recorded",
        metadata={
            "buckets_checked": len(buckets),
            "buckets_failed": len(bad),
            **{f"sum_{column}": value for column, value in totals.items()},
            "key_hash_sum": str(key_hash),
            "row_hash_sum": str(sum(int(f.row_hash) for f in actual.values())),
            "failed_buckets": MetadataValue.md(
                markdown_table(
                    ["day", "hour", "difference"],
                    [[d, h, p] for (d, h), p in list(bad.items())[:SAMPLE_BUCKETS]],
                )
            ),
        },
    )


def schema_check(
    key: AssetKey, spec: DatasetSpec, version: str, shadow: DataFrame, validation
) -> AssetCheckResult:
    from backfill_platform.specs.common import FIELD_TYPES

    columns = [(name, FIELD_TYPES[kind]) for name, kind in spec.columns.items()]
    outcome = validate_schema(
        shadow, pandera_schema(spec.shadow_table(version), columns, set(spec.key_columns))
    )
    if not outcome.passed:
        validation.fail(SCHEMA, validation.days)
    return AssetCheckResult(
        asset_key=key,
        check_name=SCHEMA,
        passed=outcome.passed,
        severity=AssetCheckSeverity.ERROR,
        metadata={
            "errors": MetadataValue.json(outcome.errors),
            "null_key_rows": MetadataValue.json(outcome.null_violations),
        },
    )


def divergence_check(
    key: AssetKey,
    spec: DatasetSpec,
    shadow: DataFrame,
    production: DataFrame,
    max_ratio: float | None,
    validation,
) -> AssetCheckResult:
    """Rows only in the shadow, only in production, or changed; blocking only above a launched bound."""
    result = compare(shadow, production, spec, validation.days)
    validation.divergence = result
    over = [day for day, p in result.partitions.items() if max_ratio is not None and p.ratio > max_ratio]
    validation.fail(DIVERGENCE, over)
    rows = [
        [
            day,
            p.candidate_rows,
            p.production_rows,
            p.only_in_candidate,
            p.only_in_production,
            p.changed,
            f"{p.ratio:.2%}",
        ]
        for day, p in sorted(result.partitions.items())
    ]
    return AssetCheckResult(
        asset_key=key,
        check_name=DIVERGENCE,
        passed=not over if max_ratio is not None else result.diverging == 0,
        severity=AssetCheckSeverity.ERROR if max_ratio is not None else AssetCheckSeverity.WARN,
        description=(
            f"blocking above {max_ratio:.2%} of rows per partition"
            if max_ratio is not None
            else "warning only"
        ),
        metadata={
            "diverging_rows": result.diverging,
            "ratio": MetadataValue.float(result.ratio),
            "max_ratio": MetadataValue.float(max_ratio)
            if max_ratio is not None
            else MetadataValue.text("none"),
            "only_in_shadow": sum(p.only_in_candidate for p in result.partitions.values()),
            "only_in_production": sum(p.only_in_production for p in result.partitions.values()),
            "changed": sum(p.changed for p in result.partitions.values()),
            "by_partition": MetadataValue.md(
                markdown_table(
                    ["partition", "shadow", "prod", "only shadow", "only prod", "changed", "ratio"], rows
                )
            ),
            "sample": MetadataValue.md(result.sample_markdown or "no differences"),
        },
    )


def events_validated_check(
    key: AssetKey,
    days: list[str],
    ingestions: dict[str, dict],
    events: dict[str, tuple[int, str]],
    validation: ShadowValidation,
) -> AssetCheckResult:
    """Each day's events were ingested, passed their own blocking checks, and are still those events.

    Without this, a day whose events were never loaded would validate trivially (0 rows expected,
    0 found) and promotion would empty that production partition; and events rewritten by a run that
    died before its checks would be trusted on an older run's verdict.
    """
    problems = {}
    for day in days:
        ingestion = ingestions.get(day)
        if ingestion is None:
            problems[day] = "events never ingested"
        elif ingestion["checks_passed"] is None:
            problems[day] = "ingested before verdicts were recorded: re-materialize the events of this day"
        elif not ingestion["checks_passed"]:
            problems[day] = f"events failed {ingestion['failed_checks']} in run {ingestion['run_id']}"
        elif (ingestion.get("events_rows"), ingestion.get("events_row_hash")) != events[day]:
            problems[day] = (
                f"events changed after their checks in run {ingestion['run_id']}: re-materialize them"
            )
    validation.fail(EVENTS_VALIDATED, sorted(problems))
    return AssetCheckResult(
        asset_key=key,
        check_name=EVENTS_VALIDATED,
        passed=not problems,
        severity=AssetCheckSeverity.ERROR,
        description="every day's events were ingested and passed reconciliation, quarantine ratio and schema",
        metadata={
            "days_checked": len(days),
            "failed_partitions": MetadataValue.json(sorted(problems)),
            "problems": MetadataValue.md(markdown_table(["day", "problem"], sorted(problems.items()))),
        },
    )


def validate_shadow(
    key: AssetKey,
    spec: DatasetSpec,
    version: str,
    events: DataFrame,
    shadow: DataFrame,
    production: DataFrame,
    days: list[str],
    ingestions: dict[str, dict],
    events_fingerprints: dict[str, tuple[int, str]],
    max_divergence_ratio: float | None,
) -> ShadowValidation:
    validation = ShadowValidation(days=days)
    expected = expected_from_events(events, spec)
    validation.actual = actual_figures(shadow, spec)
    validation.results = [
        events_validated_check(key, days, ingestions, events_fingerprints, validation),
        row_count_check(key, days, expected, validation.actual, validation),
        checksum_check(key, spec, days, expected, validation.actual, validation),
        schema_check(key, spec, version, shadow, validation),
        divergence_check(key, spec, shadow, production, max_divergence_ratio, validation),
    ]
    return validation
