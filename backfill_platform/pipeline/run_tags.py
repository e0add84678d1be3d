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
    """The tag's text for `days_before` (stream -> days): streams with 0 days are left out."""
    negative = {stream: days for stream, days in days_before.items() if days < 0}
    if negative:
        raise ValueError(f"days before a range cannot be negative: {negative}")
    return ",".join(f"{stream}={days}" for stream, days in sorted(days_before.items()) if days)


def parse_source_days_before(tags: Mapping[str, str]) -> dict[str, int]:
    """Every stream the tag names, with its days before the range: the whole tag is read, so a malformed
    item is refused whichever stream asks. Whitespace around names, numbers and items is ignored."""
    text = tags.get(SOURCE_DAYS_BEFORE_TAG, "").strip()
    parsed: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, equals, days = (part.strip() for part in item.partition("="))
        # ASCII digits only: `str.isdigit` also takes `²`, which `int` then refuses without naming the tag.
        if not (name and equals and days.isascii() and days.isdigit()):
            raise ValueError(
                f"run tag {SOURCE_DAYS_BEFORE_TAG}={text!r}: each item must be `<stream>=<days>`, e.g. "
                f"`impressions=1` (not {item!r})"
            )
        if name in parsed and parsed[name] != int(days):
            raise ValueError(f"run tag {SOURCE_DAYS_BEFORE_TAG}={text!r} names {name!r} twice")
        parsed[name] = int(days)
    return parsed


def source_days_before(tags: Mapping[str, str], stream: str) -> int:
    """How many days before the run's range the stream's events step must ingest or validate (0: none)."""
    return parse_source_days_before(tags).get(stream, 0)
