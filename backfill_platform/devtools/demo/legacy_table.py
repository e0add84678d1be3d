"""The table a team's old pipeline left behind, for the demo and tests of `adopt`.

It runs a dataset version's transform straight into a plain Iceberg table outside the platform's
namespaces — no shadow, no checks — the way production was written before the platform existed.
"""

from __future__ import annotations

from datetime import date

from pyspark.sql import SparkSession

from backfill_platform.lakehouse.tables import in_range, replace_range, table_id
from backfill_platform.pipeline.names import events_table
from backfill_platform.pipeline.tables.dataset_tables import conform, ensure_dataset_table
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.durations import midnight
from backfill_platform.specs.stream import StreamSpec

LEGACY_NAMESPACE = "legacy"


def write_legacy_table(
    spark: SparkSession, spec: DatasetSpec, stream: StreamSpec, version: str, start: date, end: date
) -> str:
    """Compute [start, end) with `version` into `legacy.<dataset>`; return the table identifier."""
    target = table_id(spark, LEGACY_NAMESPACE, spec.name)
    ensure_dataset_table(spark, spec, target)
    events = spark.table(events_table(spark, stream)).where(
        in_range("event_time", midnight(start), midnight(end))
    )
    transform = spec.versions[version].load_transform()
    output = conform(spec.apply_transform(transform, {stream.name: events}), spec, version)
    replace_range(output, target, spec.partition_column, start, end, {"written-by": f"legacy {version} job"})
    return target
