"""What a run's tags mean to every stage: who and why (recorded on the snapshots it writes, under the
snapshot-property keys below), and the promotion policy that decides what one failed day holds back."""

from __future__ import annotations

from collections.abc import Mapping

from dagster import AssetExecutionContext

BACKFILL_TAG = "dagster/backfill"
REASON_TAG = "backfill_platform/reason"
TICKET_TAG = "backfill_platform/ticket"
PROMOTION_POLICY_TAG = "backfill_platform/promotion_policy"
ALL_OR_NOTHING = "all_or_nothing"
PER_DAY = "per_day"
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


def promotion_policy(tags: Mapping[str, str]) -> str:
    """The launched promotion policy: one bad day holds back the range (default), or only itself."""
    policy = tags.get(PROMOTION_POLICY_TAG, ALL_OR_NOTHING)
    if policy not in (ALL_OR_NOTHING, PER_DAY):
        raise ValueError(
            f"run tag {PROMOTION_POLICY_TAG}={policy!r} must be {ALL_OR_NOTHING!r} or {PER_DAY!r}"
        )
    return policy


# A dataset backfill's sources whose lookback reaches before its range: `impressions=1,weather=1`. Their
# events steps ingest (or validate as already ingested and unchanged) that many days before the range.
SOURCE_DAYS_BEFORE_TAG = "backfill_platform/source_days_before"


def source_days_before_tag(days_before: Mapping[str, int]) -> str:
    return ",".join(f"{stream}={days}" for stream, days in sorted(days_before.items()) if days)


def source_days_before(tags: Mapping[str, str], stream: str) -> int:
    """How many days before the run's range the stream's events step must ingest or validate (0: none)."""
    text = tags.get(SOURCE_DAYS_BEFORE_TAG, "").strip()
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _, days = item.partition("=")
        if not days.isdigit():
            raise ValueError(
                f"run tag {SOURCE_DAYS_BEFORE_TAG}={text!r}: each item must be `<stream>=<days>`, e.g. "
                "`impressions=1`"
            )
        if name.strip() == stream:
            return int(days)
    return 0
