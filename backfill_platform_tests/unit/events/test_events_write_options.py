"""Which events writes are distributed by range (`ingest._events_write_options`): enough events in all, and
enough besides the biggest day for a second writing task to pay for the sampling job; any other write
keeps Iceberg's hash."""

from __future__ import annotations

from backfill_platform.pipeline.events.ingest import (
    RANGE_WRITE_FROM_EVENTS,
    PartitionFigures,
    _events_write_options,
)

RANGE = {"distribution-mode": "range"}
HALF = RANGE_WRITE_FROM_EVENTS // 2


def figures(*written: int) -> dict[str, PartitionFigures]:
    return {
        f"2026-10-0{i + 1}": PartitionFigures(f"2026-10-0{i + 1}", written=n) for i, n in enumerate(written)
    }


def test_a_big_write_spread_over_several_days_is_distributed_by_range() -> None:
    assert _events_write_options(figures(HALF, HALF)) == RANGE
    assert _events_write_options(figures(RANGE_WRITE_FROM_EVENTS, HALF // 2, HALF // 2, 0)) == RANGE


def test_one_day_a_small_write_or_one_big_day_and_crumbs_keep_the_hash() -> None:
    assert _events_write_options(figures(RANGE_WRITE_FROM_EVENTS * 4)) == {}  # one day is one task either way
    assert _events_write_options(figures(RANGE_WRITE_FROM_EVENTS * 4, 0)) == {}
    assert _events_write_options(figures(RANGE_WRITE_FROM_EVENTS, 1)) == {}  # the second task would idle
    assert _events_write_options(figures(1000, 1000)) == {}
    assert _events_write_options({}) == {}
