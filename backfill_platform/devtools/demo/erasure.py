"""The demo's erasure story: one person asks to be erased; the next backfill re-derives their history
without them, accounts for every record it dropped, and the checks prove none reached a table.

The archive stays as it is (immutable): the request is data (`platform.erasure_requests`, a keyed hash of
the subject), and the re-derivation honors it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from rich.console import Console

from backfill_platform.pipeline.erasure.proof import ERASURE_HONORED
from backfill_platform.pipeline.erasure.requests import file_requests
from backfill_platform.pipeline.names import events_table, production_table
from backfill_platform.pipeline.run_tags import REASON_TAG, TICKET_TAG
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.stream import StreamSpec


def erasure_story(
    console: Console, run: Callable, spark: SparkSession, stream: StreamSpec, spec: DatasetSpec, days: int
) -> None:
    """File one request for the demo's busiest viewer, backfill the views again, and show what it erased."""
    step = time.monotonic()
    events = spark.table(events_table(spark, stream))
    subject = events.groupBy("user_id").count().orderBy(F.desc("count"), "user_id").first()["user_id"]
    before = events.where(F.col("user_id") == subject).count()
    filed, snapshot = file_requests(
        spark, [subject], stream.name, "demo: a viewer asked to be erased", "DEMO-ERASE-1"
    )
    result = run(
        [
            ("raw", stream.events_table),
            ("shadow", spec.shadow_table(spec.active_version)),
            ("prod", f"{spec.name}_production"),
        ],
        **{REASON_TAG: "demo: re-derive after an erasure request", TICKET_TAG: "DEMO-ERASE-1"},
    )
    if not result.success:
        raise SystemExit("the backfill after the erasure request failed; see the log above")
    erased = sum(
        m.metadata["erased"].value
        for m in (e.event_specific_data.materialization for e in result.get_asset_materialization_events())
        if m.asset_key.path[-1] == stream.events_table
    )
    after = spark.table(events_table(spark, stream)).where(F.col("user_id") == subject).count()
    checks = [c for c in result.get_asset_check_evaluations() if c.check_name == ERASURE_HONORED]
    request = filed[0].request_id if filed else "already on file"
    console.print(
        f"\n[bold]9. erasure[/bold]: request {request} (requests snapshot {snapshot}) for one viewer of "
        f"{stream.name}, stored as a keyed hash; the backfill of {spec.name} re-derived {days} days from the "
        f"unchanged archive in {time.monotonic() - step:.1f} s: {erased:,} of their records erased "
        f"(read = written + duplicates + quarantined + erased, per day), their events rows {before:,} → {after:,}; "
        f"{ERASURE_HONORED} passed on {sum(c.passed for c in checks)} of {len(checks)} shadow days. "
        f"Production {production_table(spark, spec)} holds no row of theirs: it never had one "
        f"({spec.name} aggregates viewers away), and its days were re-derived without them."
    )
