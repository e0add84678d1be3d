"""Small helpers shared by assets: the run's identity as Iceberg snapshot properties."""

from __future__ import annotations

from dagster import AssetExecutionContext

BACKFILL_TAG = "dagster/backfill"
REASON_TAG = "backfill_platform/reason"
TICKET_TAG = "backfill_platform/ticket"


def run_properties(context: AssetExecutionContext) -> dict[str, str]:
    """Who/why of a write, recorded on the Iceberg snapshot it creates."""
    tags = context.run.tags
    properties = {"dagster.run-id": context.run.run_id}
    for tag, name in ((BACKFILL_TAG, "dagster.backfill-id"), (REASON_TAG, "reason"), (TICKET_TAG, "ticket")):
        if tags.get(tag):
            properties[name] = tags[tag]
    return properties
