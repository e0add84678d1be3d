"""The promotion gate: only shadow data that passed its blocking checks, unchanged since, is promotable.

Dagster's blocking checks skip production within the run that failed them; the gate also holds when
production is materialized alone later, or from the command line. It compares what is about to be
promoted — partition by partition, by row count and order-independent hash sum — with what the last
validation of that partition recorded in the ledger. This module reads the ledger (`gate_partitions`) and
leaves the decision to the pure `validation.promotion_verdicts.gate_decision`, which judges each day on
its own, so that a promotion can either refuse the whole range or publish only the days that pass.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from backfill_platform.pipeline.ledger.ledger import latest_shadow_rows
from backfill_platform.pipeline.validation.fingerprints import Fingerprint
from backfill_platform.pipeline.validation.partition_inputs import PartitionInputs
from backfill_platform.pipeline.validation.promotion_verdicts import GateDecision, gate_decision
from backfill_platform.specs.dataset import DatasetSpec


class PromotionRefused(RuntimeError):
    """Promotion would publish data that was not validated; production is left untouched."""


def gate_partitions(
    spark: SparkSession,
    spec: DatasetSpec,
    version: str,
    shadow: dict[str, Fingerprint],
    days: list[str],
    inputs: dict[str, PartitionInputs],
) -> GateDecision:
    """The gate's decision for `days` of shadow `version` from their latest validations in the ledger:
    `shadow` is each day's fingerprint about to be promoted, `inputs` what each day reads from every
    source now (`shadow.inputs.current_inputs`)."""
    validations = latest_shadow_rows(spark, spec.name, version, days)
    return gate_decision(validations, version, shadow, days, inputs)


def refusal(spec: DatasetSpec, version: str, problems: dict[str, str]) -> PromotionRefused:
    """The refusal naming every day that is not promotable and why."""
    return PromotionRefused(
        f"refusing to promote {spec.name} {version}: "
        + "; ".join(f"{day}: {reason}" for day, reason in sorted(problems.items()))
        + ". Production is unchanged."
    )
