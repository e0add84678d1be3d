"""Blocking checks of a shadow range, one verdict per day: events validated, row counts and checksums
per bucket (hour or day), schema, divergence from production.

A day is promotable only when no blocking check failed for it; each verdict carries that day's numbers
as metadata for the UI (and its digest is recorded on the promotion snapshot).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import TypeVar

from dagster import MetadataValue
from pyspark.sql import DataFrame

from backfill_platform.pipeline.run_settings import MAX_DIVERGENCE_TAG
from backfill_platform.pipeline.validation.buckets import (
    Bucket,
    BucketFigures,
    failing_bucket_rows,
    failing_buckets,
    null_keys_of,
)
from backfill_platform.pipeline.validation.checksums import Fingerprint
from backfill_platform.pipeline.validation.day_inputs import JudgedInputs
from backfill_platform.pipeline.validation.divergence import Divergence, compare
from backfill_platform.pipeline.validation.metadata_tables import metadata_table
from backfill_platform.pipeline.validation.outcome import ShadowValidation
from backfill_platform.pipeline.validation.schema import SCHEMA, schema_verdicts
from backfill_platform.pipeline.validation.verdicts import PartitionVerdict
from backfill_platform.specs.common import FIELD_TYPES
from backfill_platform.specs.dataset import DatasetSpec

T = TypeVar("T")

ROW_COUNTS = "row_counts_per_bucket"
CHECKSUMS = "checksums_per_bucket"
DIVERGENCE = "divergence_vs_production"
EVENTS_VALIDATED = "events_validated"
SAMPLE_BUCKETS = 20
CHECK_DESCRIPTIONS = {
    EVENTS_VALIDATED: (
        "every source day it reads (its own, and the lookback's) passed its events checks, is settled, "
        "and still holds the events checked"
    ),
    ROW_COUNTS: "rows per bucket (hour or day) equal the events-side expectation; keys unique",
    CHECKSUMS: "per-bucket sums reconcile with the events; order-independent hash sums recorded",
    SCHEMA: "pandera model of the version's table",
    DIVERGENCE: (
        "rows only in the shadow, only in production, or changed: a warning (a re-derived day is expected "
        f"to differ), blocking only above the ratio a backfill sets with the run tag `{MAX_DIVERGENCE_TAG}`"
    ),
}


def per_day(mapping: Mapping[Bucket, T]) -> dict[str, dict[Bucket, T]]:
    """A bucket mapping split by day, once: a year's range has thousands of buckets, and each day's
    verdict needs only its own (filtering the whole mapping per day would cost days x buckets)."""
    split: dict[str, dict[Bucket, T]] = defaultdict(dict)
    for bucket, value in mapping.items():
        split[bucket[0]][bucket] = value
    return split


def _sample(bad: dict[Bucket, str], header: str) -> MetadataValue:
    return metadata_table(*failing_bucket_rows(bad, header, SAMPLE_BUCKETS))


def _divergence_sample(result: Divergence, day: str) -> MetadataValue:
    """The day's first differing rows as a table, or why there are none to show."""
    if day in result.samples:
        return metadata_table(result.sample_header, result.samples[day])
    return MetadataValue.text(result.notes.get(day, "no differences"))


def row_count_check(days: list[str], expected, actual) -> list[PartitionVerdict]:
    """Rows per bucket equal what the events imply, and the key columns are unique."""

    def problem(want: BucketFigures, got: BucketFigures) -> str | None:
        if got.rows != want.rows:
            return f"{got.rows} rows, events imply {want.rows}"
        if got.distinct_keys != got.rows:
            return f"{got.rows - got.distinct_keys} duplicate keys"
        return None

    buckets, bad = failing_buckets(expected, actual, problem)
    checked, failed = per_day(dict.fromkeys(buckets)), per_day(bad)
    actual_by_day, expected_by_day = per_day(actual), per_day(expected)
    verdicts = []
    for day in days:
        failing = failed.get(day, {})
        metadata = {
            "buckets_checked": len(checked.get(day, {})),
            "buckets_failed": len(failing),
            "rows": sum(f.rows for f in actual_by_day.get(day, {}).values()),
            "expected_rows": sum(f.rows for f in expected_by_day.get(day, {}).values()),
            "failed_buckets": _sample(failing, "problem"),
        }
        verdicts.append(PartitionVerdict(ROW_COUNTS, day, not failing, metadata))
    return verdicts


def checksum_check(spec: DatasetSpec, days: list[str], expected, actual) -> list[PartitionVerdict]:
    """Per-bucket sums of the aggregation columns equal the events-side sums; hash sums are recorded."""

    def problem(want: BucketFigures, got: BucketFigures) -> str | None:
        wrong = [
            f"{r.column}: shadow {got.sums.get(r.column, 0)}, events imply {want.sums.get(r.column, 0)}"
            for r in spec.reconciliation
            if got.sums.get(r.column, 0) != want.sums.get(r.column, 0)
        ]
        return "; ".join(wrong) or None

    buckets, bad = failing_buckets(expected, actual, problem)
    checked, failed, actual_by_day = per_day(dict.fromkeys(buckets)), per_day(bad), per_day(actual)
    verdicts = []
    for day in days:
        failing = failed.get(day, {})
        figures = list(actual_by_day.get(day, {}).values())
        metadata = {
            "buckets_checked": len(checked.get(day, {})),
            "buckets_failed": len(failing),
            **{f"sum_{r.column}": sum(f.sums.get(r.column, 0) for f in figures) for r in spec.reconciliation},
            "key_hash_sum": str(sum(int(f.key_hash) for f in figures)),
            "row_hash_sum": str(sum(int(f.row_hash) for f in figures)),
            "failed_buckets": _sample(failing, "difference"),
        }
        verdicts.append(PartitionVerdict(CHECKSUMS, day, not failing, metadata))
    return verdicts


def shadow_schema_check(
    spec: DatasetSpec,
    version: str,
    shadow: DataFrame,
    days: list[str],
    null_keys: dict[str, int] | None = None,
) -> list[PartitionVerdict]:
    """The shadow has exactly the spec's columns and types, and no null key. `null_keys` are the range's
    null key counts when the bucket figures already counted them."""
    columns = [(name, FIELD_TYPES[kind]) for name, kind in spec.columns.items()]
    table = spec.shadow_table(version)
    return schema_verdicts(table, columns, set(spec.key_columns), shadow, days, null_keys, "null_key_rows")


def divergence_check(
    spec: DatasetSpec,
    shadow: DataFrame,
    production: DataFrame,
    days: list[str],
    max_ratio: float | None,
    validation: ShadowValidation,
) -> list[PartitionVerdict]:
    """Rows only in the shadow, only in production, or changed; blocking only above a launched bound."""
    result = compare(shadow, production, spec, days)
    validation.divergence = result
    verdicts = []
    for day in days:
        p = result.partitions[day]
        metadata = {
            "shadow_rows": p.candidate_rows,
            "production_rows": p.production_rows,
            "only_in_shadow": p.only_in_candidate,
            "only_in_production": p.only_in_production,
            "changed": p.changed,
            "diverging_rows": p.diverging,
            "ratio": MetadataValue.float(p.ratio),
            "max_ratio": MetadataValue.float(max_ratio)
            if max_ratio is not None
            else MetadataValue.text("none"),
            "sample": _divergence_sample(result, day),
        }
        if max_ratio is not None:
            verdicts.append(PartitionVerdict(DIVERGENCE, day, p.ratio <= max_ratio, metadata))
        else:
            # Without a bound, divergence is what the backfill is for: reported as a warning, and a
            # first promotion into an empty production is no divergence at all.
            first = p.production_rows == 0
            verdicts.append(
                PartitionVerdict(DIVERGENCE, day, first or p.diverging == 0, metadata, blocking=False)
            )
    return verdicts


def events_validated_check(days: list[str], judged: JudgedInputs) -> list[PartitionVerdict]:
    """Every source day a day reads was ingested, passed its own blocking checks (`settled` among them),
    and still holds those events: a join's day is settled only when all its inputs are.

    Without this, a day whose events were never loaded would validate trivially (0 rows expected,
    0 found) and promotion would empty that production partition; events rewritten by a run that
    died before its checks would be trusted on an older run's verdict; and a join of a settled source
    with one still receiving late events would publish an undercount stamped "validated".
    """
    verdicts = []
    for day in days:
        reads = judged.reads[day]
        problems, runs, provisional = [], [], False
        for stream, read_day in reads:
            ingestion = judged.ingestions[stream].get(read_day)
            problem = _source_day_problem(ingestion, judged.day_fingerprints[stream][read_day])
            if problem:
                # A one-stream day names no source: the day is the source day.
                problems.append(problem if len(reads) == 1 else f"{stream} {read_day}: {problem}")
            if ingestion:
                runs.append(ingestion["run_id"])
                provisional = provisional or bool(ingestion.get("provisional"))
        metadata = {
            "events_rows": judged.inputs[day].total.rows,
            "events_run": ", ".join(sorted(set(runs))) or "none",
            "provisional": provisional,
            "problem": "; ".join(problems) or "none",
        }
        if len(reads) > 1:  # a join, or a lookback: what the day read, and each source's share of it
            metadata["inputs"] = ", ".join(f"{stream} {read_day}" for stream, read_day in reads)
            for stream, fingerprint in judged.inputs[day].per_source.items():
                metadata[f"{stream}_rows"] = fingerprint.rows
        verdicts.append(PartitionVerdict(EVENTS_VALIDATED, day, not problems, metadata))
    return verdicts


def _source_day_problem(ingestion: dict | None, events: Fingerprint) -> str | None:
    if ingestion is None:
        return "events never ingested"
    if ingestion["checks_passed"] is None:
        return "ingested before verdicts were recorded: re-materialize the events of this day"
    if not ingestion["checks_passed"]:
        return f"events failed {ingestion['failed_checks']} in run {ingestion['run_id']}"
    if Fingerprint.recorded(ingestion, "events") != events:
        return f"events changed after their checks in run {ingestion['run_id']}: re-materialize them"
    return None


def validate_shadow(
    spec: DatasetSpec,
    version: str,
    judged: JudgedInputs,
    shadow: DataFrame,
    actual: dict[Bucket, BucketFigures],
    production: DataFrame,
    days: list[str],
    max_divergence_ratio: float | None,
) -> ShadowValidation:
    """Every check of a shadow range, from what its sources' events imply (`judged.expected`, computed
    by `buckets.events_values`) and the shadow's own bucket figures (`buckets.actual_figures`, which also
    count its null keys)."""
    expected = judged.expected
    validation = ShadowValidation(days=days, actual=actual)
    validation.verdicts = [
        *events_validated_check(days, judged),
        *row_count_check(days, expected, actual),
        *checksum_check(spec, days, expected, actual),
        *shadow_schema_check(spec, version, shadow, days, null_keys_of(actual, spec)),
        *divergence_check(spec, shadow, production, days, max_divergence_ratio, validation),
    ]
    return validation
