"""Pure verdicts of a promotion: the gate's decision, and whether production equals the shadow it came from.

A pure verdict module (`*_verdicts.py`): no Spark, no ledger, no Dagster context. `promotion/gate.py` reads
the latest validations from the ledger and calls `gate_decision`; `promotion/promote.py` compares the
bucket figures of the shadow and of production after the commit (`compare_buckets`), and
`promotion/checks.py` turns what differs into the `promotion_verified` check's verdicts
(`verified_verdicts`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from backfill_platform.pipeline.validation.bucket_verdicts import failed_buckets_table, split_by_partition
from backfill_platform.pipeline.validation.buckets import Bucket, BucketFigures, failing_buckets
from backfill_platform.pipeline.validation.fingerprints import Fingerprint
from backfill_platform.pipeline.validation.partition_inputs import PartitionInputs
from backfill_platform.pipeline.validation.verdicts import PartitionVerdict


@dataclass
class GateDecision:
    """The gate's answer for a range, each partition in exactly one of the two: the promotable ones with
    the ledger row of the validation that passed them, and the others with why they are held back."""

    promotable: dict[str, dict] = field(default_factory=dict)
    held_back: dict[str, str] = field(default_factory=dict)


def gate_decision(
    validations: Mapping[str, dict],
    version: str,
    shadow: Mapping[str, Fingerprint],
    days: list[str],
    inputs: Mapping[str, PartitionInputs],
) -> GateDecision:
    """Judge each day on its own, from its latest validation (`validations`: day → ledger row; a day
    never validated has none).

    A day is promotable when its latest validation passed its blocking checks, the shadow still holds
    exactly what was validated (`shadow`: each day's fingerprint about to be promoted), and its inputs are
    still the ones it was computed from: `inputs` is what each day reads from every source now, and a
    validation computed from other events (re-derived since, in any source) is stale, however good its
    verdicts were.
    """
    decision = GateDecision()
    for day in days:
        record = validations.get(day)
        if record is None:
            decision.held_back[day] = f"the checks of shadow {version} never ran"
        elif not record["checks_passed"]:
            decision.held_back[day] = (
                f"blocking checks failed ({record['failed_checks']}) in run {record['run_id']}"
            )
        elif Fingerprint.recorded(record, "shadow") != shadow[day]:
            decision.held_back[day] = f"the shadow changed after its validation in run {record['run_id']}"
        elif Fingerprint.recorded(record, "events") != inputs[day].total:
            decision.held_back[day] = (
                f"the events{changed_in(record, inputs[day])} changed since shadow {version} was validated "
                f"in run {record['run_id']} (re-derived from the archive); re-materialize shadow {version} "
                "for this day"
            )
        else:
            decision.promotable[day] = record
    return decision


def changed_in(record: Mapping[str, Any], now: PartitionInputs) -> str:
    """` of impressions` when the validation recorded its inputs per source (several sources) and they
    name the sources that changed; empty otherwise."""
    then = PartitionInputs.parse(record.get("inputs"))
    if then is None or len(now.per_source) < 2:
        return ""
    changed = then.changed_sources(now)
    # The recorded total can differ while every recorded source matches (a total recorded otherwise):
    # then no source is to blame by name.
    return " of " + ", ".join(changed) if changed else ""


def compare_buckets(
    shadow: dict[Bucket, BucketFigures], production: dict[Bucket, BucketFigures]
) -> dict[Bucket, str]:
    """Buckets whose counts, sums or hash sums differ between the shadow and production."""

    def differs(want: BucketFigures, got: BucketFigures) -> str | None:
        if (want.rows, want.sums, want.key_hash, want.row_hash) == (
            got.rows,
            got.sums,
            got.key_hash,
            got.row_hash,
        ):
            return None
        return (
            f"production {got.rows} rows, the shadow {want.rows}; row hash {got.row_hash} in production, "
            f"{want.row_hash} in the shadow"
        )

    return failing_buckets(shadow, production, differs)[1]


def verified_verdicts(check: str, days: list[str], mismatched: dict[Bucket, str]) -> list[PartitionVerdict]:
    """Each promoted day passes when production equals the shadow in every one of its buckets."""
    by_day = split_by_partition(mismatched)
    verdicts = []
    for day in days:
        mismatches = by_day.get(day, {})
        metadata = {
            "buckets_differing": len(mismatches),
            "differences": failed_buckets_table(mismatches, "difference"),
        }
        verdicts.append(PartitionVerdict(check, day, not mismatches, metadata))
    return verdicts
