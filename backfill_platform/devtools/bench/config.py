"""What `make bench` runs: the sizes, the variants, the Spark lines (`BenchConfig`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from backfill_platform import settings

# Which Spark line's Python runs a run: the bench's own environment's, or `BenchConfig.other_line`.
DEFAULT_LINE, OTHER_LINE = "default", "other"


@dataclass(frozen=True)
class BenchConfig:
    """The sizes of (a)-(g) (see `harness`), which variants run, and on which Spark lines."""

    days: int = 3
    events_per_day: int = 200_000
    repetitions: int = 3
    refresh_events_per_day: int = 20_000
    range_days: int = 7  # 0: no (d)
    short_days: int = 3  # short and long range of the memory comparison; 0: not run
    long_days: int = 30
    duckdb: bool = True  # where the `bench` extra is installed
    variants: tuple[str, ...] = ("baseline", "events", "backfill", "duckdb")  # of the comparison
    scale: bool = False  # add (f) the big day, (g) many small files and (h) copies of the big day
    big_days: int = 2
    big_events_per_day: int = 1_500_000
    # (h) how cost grows: the big day's archive this many times over (ids made distinct per copy); 0: not run
    huge_copies: int = 10
    files_days: int = 365
    files_events_per_day: int = 300
    files_per_hour: int = 3
    scale_variants: tuple[str, ...] = ("baseline", "events", "backfill", "events_hourly", "backfill_hourly")
    # The Python of another Spark line's environment: (a)-(c) and the big day run on it too; "": not run.
    other_line: str = ""
    other_line_variants: tuple[str, ...] = ("baseline", "events", "backfill")
    start: date = date(2026, 10, 1)
    out: Path = field(default_factory=lambda: settings.data_dir() / "bench")
