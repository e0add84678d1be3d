"""`make bench`: throughput of the events step and of the whole validated backfill, on a fresh archive.

Speed targets live here, never in timed tests. It runs in its own data directory (`data/bench`), so
the demo's lakehouse is left alone.
"""

from __future__ import annotations

import os
import time
from datetime import date, timedelta

from dagster import AssetKey, materialize
from rich.console import Console
from rich.table import Table

from backfill_platform import settings


def run_bench(days: int, events_per_day: int) -> None:
    os.environ[settings.DATA_DIR_ENV] = str(settings.data_dir() / "bench")
    from backfill_platform.demo import quiet, range_tags, reset_lakehouse
    from backfill_platform.factory import build_definitions
    from backfill_platform.generator.playback import GeneratorConfig, generate_playback_archive

    console = Console(width=120)
    reset_lakehouse()
    start = date(2026, 10, 1)
    last = start + timedelta(days=days - 1)
    began = time.monotonic()
    truth = generate_playback_archive(
        settings.data_dir() / "archive" / "playback",
        GeneratorConfig(start=start, days=days, events_per_day=events_per_day),
    )
    timings = [("generate archive", time.monotonic() - began, truth["totals"]["lines"])]
    defs = build_definitions()
    spark = defs.resources["spark"]
    began = time.monotonic()
    spark.spark_session.sql("SELECT 1").collect()
    timings.append(("Spark session start", time.monotonic() - began, 0))

    def timed(label: str, keys: list[tuple[str, str]]) -> None:
        began = time.monotonic()
        result = materialize(
            [defs.get_assets_def(AssetKey(list(k))) for k in keys],
            resources={"spark": spark},
            tags=range_tags(start, last),
            run_config=quiet("ERROR"),
        )
        assert result.success, label
        timings.append((label, time.monotonic() - began, truth["totals"]["lines"]))

    events = ("raw", "playback_events")
    timed("events (cold)", [events])
    timed("events (warm, idempotent re-run)", [events])
    timed(
        "shadow v2 + checks + promotion",
        [("shadow", "views_per_title__v2"), ("prod", "views_per_title_production")],
    )
    timed(
        "whole validated backfill",
        [events, ("shadow", "views_per_title__v2"), ("prod", "views_per_title_production")],
    )

    table = Table(title=f"bench: {days} days x {events_per_day:,} events, {truth['totals']['bytes']:,} bytes")
    for column in ("step", "seconds", "archive lines/s"):
        table.add_column(column, justify="right")
    for label, seconds, lines in timings:
        table.add_row(label, f"{seconds:.1f}", f"{lines / seconds:,.0f}" if lines else "-")
    console.print(table)
