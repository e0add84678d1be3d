"""Pure verdicts over a divergence from production: blocking above a launched bound, else a warning.

A pure verdict module (`*_verdicts.py`): it judges what `divergence.compare` counted, with no Spark, no
ledger and no Dagster context; `shadow/checks.py` runs the comparison and calls it.
"""

from __future__ import annotations

from dagster import MetadataValue

from backfill_platform.pipeline.validation.divergence import Divergence
from backfill_platform.pipeline.validation.metadata_tables import metadata_table
from backfill_platform.pipeline.validation.verdicts import PartitionVerdict


def divergence_verdicts(
    check: str, result: Divergence, days: list[str], max_ratio: float | None
) -> list[PartitionVerdict]:
    """Rows only in the shadow, only in production, or changed, per day; blocking only above a bound."""
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
            "sample": _sample(result, day),
        }
        if max_ratio is not None:
            verdicts.append(PartitionVerdict(check, day, p.ratio <= max_ratio, metadata))
        else:
            # Without a bound, divergence is what the backfill is for: reported as a warning, and a
            # first promotion into an empty production is no divergence at all.
            first = p.production_rows == 0
            verdicts.append(PartitionVerdict(check, day, first or p.diverging == 0, metadata, blocking=False))
    return verdicts


def _sample(result: Divergence, day: str) -> MetadataValue:
    """The day's first differing rows as a table, or why there are none to show."""
    if day in result.samples:
        return metadata_table(result.sample_header, result.samples[day])
    return MetadataValue.text(result.notes.get(day, "no differences"))
