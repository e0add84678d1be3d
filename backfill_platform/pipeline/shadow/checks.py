"""The shadow's checks, one verdict per day: events validated, row counts and checksums per bucket (hour or
day), schema, divergence from production.

A check module: it reads what a check needs (the shadow through pandera, the comparison with production in
Spark) and calls the pure verdict functions of `pipeline/validation/` (`*_verdicts.py`), naming the check.
A day is promotable only when no blocking check failed for it; each verdict carries that day's numbers
as metadata for the UI (and its digest is recorded on the promotion snapshot).
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from backfill_platform.pipeline.run_settings import MAX_DIVERGENCE_TAG
from backfill_platform.pipeline.validation.bucket_verdicts import checksum_verdicts, row_count_verdicts
from backfill_platform.pipeline.validation.buckets import Bucket, BucketFigures, null_keys_of
from backfill_platform.pipeline.validation.divergence import compare
from backfill_platform.pipeline.validation.divergence_verdicts import divergence_verdicts
from backfill_platform.pipeline.validation.input_verdicts import events_validated_verdicts
from backfill_platform.pipeline.validation.partition_inputs import JudgedInputs
from backfill_platform.pipeline.validation.schema import SCHEMA, schema_verdicts
from backfill_platform.pipeline.validation.shadow_validation import ShadowValidation
from backfill_platform.pipeline.validation.verdicts import PartitionVerdict
from backfill_platform.specs.common import FIELD_TYPES
from backfill_platform.specs.dataset import DatasetSpec

ROW_COUNTS = "row_counts_per_bucket"
CHECKSUMS = "checksums_per_bucket"
DIVERGENCE = "divergence_vs_production"
EVENTS_VALIDATED = "events_validated"
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
    return divergence_verdicts(DIVERGENCE, result, days, max_ratio)


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
        *events_validated_verdicts(EVENTS_VALIDATED, days, judged),
        *row_count_verdicts(ROW_COUNTS, days, expected, actual),
        *checksum_verdicts(CHECKSUMS, spec, days, expected, actual),
        *shadow_schema_check(spec, version, shadow, days, null_keys_of(actual, spec)),
        *divergence_check(spec, shadow, production, days, max_divergence_ratio, validation),
    ]
    return validation
