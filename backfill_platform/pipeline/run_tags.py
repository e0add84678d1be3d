"""Who launched a run and why: its tags of who and why, recorded on the snapshots it writes under the
snapshot-property keys below. What a run is told to do (policy, partitions before, divergence bound) is
`run_settings`."""

from __future__ import annotations

from dagster import AssetExecutionContext

BACKFILL_TAG = "dagster/backfill"
REASON_TAG = "backfill_platform/reason"
TICKET_TAG = "backfill_platform/ticket"
# Snapshot properties of who and why (the other keys of a platform commit are in `ledger.commits`).
RUN_ID = "dagster.run-id"
BACKFILL_ID = "dagster.backfill-id"
REASON = "reason"
TICKET = "ticket"


def run_properties(context: AssetExecutionContext) -> dict[str, str]:
    """Who/why of a write, recorded on the Iceberg snapshot it creates."""
    tags = context.run.tags
    properties = {RUN_ID: context.run.run_id}
    for tag, name in ((BACKFILL_TAG, BACKFILL_ID), (REASON_TAG, REASON), (TICKET_TAG, TICKET)):
        if tags.get(tag):
            properties[name] = tags[tag]
    return properties
