"""One line per failed check and day, with the numbers the check recorded.

The verdicts come from the run's `AssetCheckEvaluation`s (read back from the Dagster instance), whose
metadata carries each day's figures (see `pipeline/events/checks.py`, `pipeline/shadow/checks.py`). A
check this module does not know is described by its numeric metadata, so a new check is never reported as
a bare name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from backfill_platform.pipeline.events.checks import (
    QUARANTINE_RATIO,
    RECONCILIATION,
    RECORDS_PRESENT,
    SETTLED,
)
from backfill_platform.pipeline.shadow.checks import CHECKSUMS, DIVERGENCE, EVENTS_VALIDATED, ROW_COUNTS

QUARANTINED_PREFIX = "quarantined_"


def percent(ratio: float) -> str:
    """`3.1%`, `1%`, `0.05%`: three significant digits, no trailing zeros."""
    return f"{ratio * 100:.3g}%"


def _lines(n: int) -> str:
    return "line" if n == 1 else "lines"


def describe(
    check: str, metadata: Mapping[str, Any], bucket: str | None = None, partition: str = "day"
) -> str:
    """Why `check` failed for one partition, from its metadata (plain values, not `MetadataValue`s).

    `bucket` is the dataset's validation bucket (`hour`, or `day` or `partition`; default `hour`): a
    dataset whose whole partition is the bucket has one per partition, so its row counts and sums are the
    partition's, not hour buckets'. `partition` names one: `day`, or `hour` for an hourly dataset."""
    m = metadata
    whole = (bucket or m.get("bucket") or "hour") in ("day", "partition")
    if check == QUARANTINE_RATIO:
        reasons = sorted(
            (
                (k.removeprefix(QUARANTINED_PREFIX), v)
                for k, v in m.items()
                if k.startswith(QUARANTINED_PREFIX)
            ),
            key=lambda item: -item[1],
        )
        by_reason = ", ".join(f"{n:,} {_lines(n)} {reason}" for reason, n in reasons) or "no reason recorded"
        return f"{percent(m['ratio'])} > {percent(m['bound'])}: {by_reason} (of {m['read']:,} read)"
    if check == RECONCILIATION:
        return (
            f"{m['unaccounted']:,} lines unaccounted: read {m['read']:,} != written {m['written']:,} "
            f"+ duplicates {m['duplicates']:,} + quarantined {m['quarantined']:,}"
        )
    if check == RECORDS_PRESENT:
        return f"no archive records ({m['archive_files']} archive files in its read window)"
    if check in (SETTLED, EVENTS_VALIDATED):
        return str(m.get("problem", "not settled"))
    if check == ROW_COUNTS and whole:
        if m["rows"] == m["expected_rows"]:
            return f"the {partition}'s {m['rows']:,} rows hold duplicate keys"
        return f"the {partition}'s row count is wrong: {m['rows']:,} rows, the events imply {m['expected_rows']:,}"
    if check == ROW_COUNTS:
        return (
            f"{m['buckets_failed']} of {m['buckets_checked']} hour buckets wrong: "
            f"{m['rows']:,} rows, the events imply {m['expected_rows']:,}"
        )
    if check == CHECKSUMS and whole:
        return f"the {partition}'s sums differ from the events"
    if check == CHECKSUMS:
        return f"{m['buckets_failed']} of {m['buckets_checked']} hour buckets' sums differ from the events"
    if check == DIVERGENCE:
        bound = m.get("max_ratio")
        limit = f" > {percent(bound)}" if isinstance(bound, float) else ""
        return (
            f"{m['diverging_rows']:,} rows diverge from production ({percent(m['ratio'])}{limit}): "
            f"{m['only_in_shadow']:,} only in shadow, {m['only_in_production']:,} only in production, "
            f"{m['changed']:,} changed"
        )
    numbers = [f"{k} {v}" for k, v in m.items() if isinstance(v, (int, float, str)) and len(str(v)) < 80]
    return ", ".join(numbers) or "no figures recorded"
