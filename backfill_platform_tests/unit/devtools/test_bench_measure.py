"""What the bench measures (devtools/bench/measure.py): a variant's Spark-busy time is the union of its jobs'
spans within the window, overlaps counted once."""

from __future__ import annotations

from backfill_platform.devtools.bench.measure import busy_seconds


def test_busy_seconds_is_the_union_of_jobs_within_the_window() -> None:
    jobs = [(0.0, 2.0), (1.0, 3.0), (5.0, 6.0), (9.0, 12.0)]
    assert busy_seconds(jobs, 0.0, 10.0) == 3.0 + 1.0 + 1.0
    assert busy_seconds(jobs, 2.5, 5.5) == 0.5 + 0.5
    assert busy_seconds([], 0.0, 10.0) == 0.0
