"""The session's generated archive (conftest's `truth`) and where the repository's tools are."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

START = date(2026, 10, 1)
DAYS = 5
EVENTS_PER_DAY = 2000
D1, D2, D3 = START, START + timedelta(days=1), START + timedelta(days=2)

REPO_ROOT = Path(__file__).resolve().parents[2]
DAGSTER_CLI = REPO_ROOT / ".venv" / "bin" / "dagster"


def range_tags(first: date, last: date, **extra: str) -> dict[str, str]:
    """The run tags of a single-run backfill of the days first..last (inclusive)."""
    return {
        "dagster/asset_partition_range_start": first.isoformat(),
        "dagster/asset_partition_range_end": last.isoformat(),
        **extra,
    }
