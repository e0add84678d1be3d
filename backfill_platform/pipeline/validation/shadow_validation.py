"""`ShadowValidation`: what a shadow's validation concluded (its per-day verdicts, the figures behind them,
the divergence), built by `shadow/checks.py` and recorded in the ledger."""

from __future__ import annotations

from dataclasses import dataclass, field

from backfill_platform.pipeline.validation.buckets import Bucket, BucketFigures
from backfill_platform.pipeline.validation.divergence import Divergence
from backfill_platform.pipeline.validation.verdicts import PartitionVerdict, digest, failed_partitions


@dataclass
class ShadowValidation:
    days: list[str]
    verdicts: list[PartitionVerdict] = field(default_factory=list)
    actual: dict[Bucket, BucketFigures] = field(default_factory=dict)
    divergence: Divergence | None = None

    @property
    def failed(self) -> dict[str, list[str]]:
        return failed_partitions(self.verdicts)

    def passed(self, day: str) -> bool:
        return day not in self.failed

    @property
    def digest(self) -> str:
        return digest(self.verdicts)
