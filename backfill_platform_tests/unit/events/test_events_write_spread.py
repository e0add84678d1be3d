"""Which events writes are distributed by range (`ingest._spread`): several days with events and enough of
them that a second writing task pays for the sampling job; any other write keeps Iceberg's hash."""

from __future__ import annotations

from backfill_platform.pipeline.events.ingest import RANGE_WRITE_FROM_EVENTS, PartitionFigures, _spread


def figures(*written: int) -> dict[str, PartitionFigures]:
    return {
        f"2026-10-0{i + 1}": PartitionFigures(f"2026-10-0{i + 1}", written=n) for i, n in enumerate(written)
    }


def test_a_big_write_of_several_days_is_distributed_by_range() -> None:
    half = RANGE_WRITE_FROM_EVENTS // 2
    assert _spread(figures(half, half)) == {"distribution-mode": "range"}
    assert _spread(figures(RANGE_WRITE_FROM_EVENTS, 1, 0)) == {"distribution-mode": "range"}


def test_one_day_or_a_small_write_keeps_the_hash() -> None:
    assert _spread(figures(RANGE_WRITE_FROM_EVENTS * 4)) == {}  # one day is one task either way
    assert _spread(figures(RANGE_WRITE_FROM_EVENTS * 4, 0)) == {}
    assert _spread(figures(1000, 1000)) == {}
    assert _spread({}) == {}
