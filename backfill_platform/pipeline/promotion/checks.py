"""Production's checks, one verdict per promoted day: production equals the shadow it was promoted from,
and (when the dataset holds a subject column) it honors every erasure request.

A check module: it reads what a check needs and calls the pure verdicts of
`validation.promotion_verdicts`, naming the check; `erasure_honored` is the erasure stage's own check
(`erasure.proof`, which reads the requests), run here on the promoted range of production.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import SparkSession

from backfill_platform.pipeline.erasure.proof import production_erasure_verdicts
from backfill_platform.pipeline.names import production_table
from backfill_platform.pipeline.promotion.promote import Promotion
from backfill_platform.pipeline.tables.dataset_tables import read_range, table_partition
from backfill_platform.pipeline.validation.promotion_verdicts import verified_verdicts
from backfill_platform.pipeline.validation.verdicts import PartitionVerdict
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.stream import StreamSpec

PROMOTION_VERIFIED = "promotion_verified"
PROMOTION_VERIFIED_DESCRIPTION = "production equals the shadow, bucket by bucket, after the promotion"


def production_checks(
    session: SparkSession,
    spec: DatasetSpec,
    sources: Sequence[StreamSpec],
    promotion: Promotion,
    erasure: bool,
) -> list[PartitionVerdict]:
    """The verdicts of every promoted day: `promotion_verified` from the buckets that differed after the
    commit, and with `erasure` (a dataset holding a subject column) `erasure_honored`, read from the
    promoted range of production at the promotion's snapshot."""
    verdicts = verified_verdicts(PROMOTION_VERIFIED, promotion.partitions, promotion.mismatched_buckets)
    if erasure and promotion.partitions:
        table = production_table(session, spec)
        promoted = read_range(session, table, spec, promotion.start, promotion.end, promotion.snapshot_id)
        verdicts += production_erasure_verdicts(
            session, spec, sources, promoted, table_partition(spec), promotion.partitions
        )
    return verdicts
