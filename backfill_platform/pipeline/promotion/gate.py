"""The promotion gate: only shadow data that passed its blocking checks, unchanged since, is promotable.

Dagster's blocking checks skip production within the run that failed them; the gate also holds when
production is materialized alone later, or from the command line. It compares what is about to be
promoted — partition by partition, by row count and order-independent hash sum — with what the last
validation of that partition recorded in the ledger. It judges each day on its own (`gate_problems`), so
that a promotion can either refuse the whole range or publish only the days that pass.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from backfill_platform.pipeline.ledger.ledger import latest_shadow_rows
from backfill_platform.pipeline.validation.checksums import Fingerprint
from backfill_platform.pipeline.validation.day_inputs import DayInputs
from backfill_platform.specs.dataset import DatasetSpec


class PromotionRefused(RuntimeError):
    """Promotion would publish data that was not validated; production is left untouched."""


def gate_problems(
    spark: SparkSession,
    spec: DatasetSpec,
    version: str,
    shadow: dict[str, Fingerprint],
    days: list[str],
    inputs: dict[str, DayInputs],
) -> tuple[dict[str, dict], dict[str, str]]:
    """Judge each day on its own: (the ledger rows that validated the promotable days, day → reason
    for the others). Every day of `days` is in exactly one of the two.

    A day is promotable when its latest validation passed its blocking checks, the shadow still holds
    exactly what was validated (`shadow`: each day's fingerprint about to be promoted), and its inputs are
    still the ones it was computed from: `inputs` is what each day reads from every source now
    (`shadow.inputs`), and a validation computed from other events (re-derived since, in any source) is
    stale, however good its verdicts were.
    """
    current = shadow
    validations = latest_shadow_rows(spark, spec.name, version, days)
    passed: dict[str, dict] = {}
    problems: dict[str, str] = {}
    for day in days:
        record = validations.get(day)
        if record is None:
            problems[day] = f"the checks of shadow {version} never ran"
        elif not record["checks_passed"]:
            problems[day] = f"blocking checks failed ({record['failed_checks']}) in run {record['run_id']}"
        elif Fingerprint.recorded(record, "shadow") != current[day]:
            problems[day] = f"the shadow changed after its validation in run {record['run_id']}"
        elif Fingerprint.recorded(record, "events") != inputs[day].total:
            problems[day] = (
                f"the events{_changed_in(record, inputs[day])} changed since shadow {version} was validated "
                f"in run {record['run_id']} (re-derived from the archive); re-materialize shadow {version} "
                "for this day"
            )
        else:
            passed[day] = record
    return passed, problems


def _changed_in(record: dict, now: DayInputs) -> str:
    """` of impressions` when the validation recorded its inputs per source (several sources)."""
    then = DayInputs.parse(record.get("inputs"))
    if then is None or len(now.per_source) < 2:
        return ""
    return " of " + ", ".join(then.changed_sources(now))


def refusal(spec: DatasetSpec, version: str, problems: dict[str, str]) -> PromotionRefused:
    """The refusal naming every day that is not promotable and why."""
    return PromotionRefused(
        f"refusing to promote {spec.name} {version}: "
        + "; ".join(f"{day}: {reason}" for day, reason in sorted(problems.items()))
        + ". Production is unchanged."
    )
