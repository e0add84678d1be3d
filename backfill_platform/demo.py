"""The demo: a week of synthetic playback events, from the archive to validated production tables."""

from __future__ import annotations

import time
from datetime import date, timedelta

from dagster import AssetSelection, DagsterInstance, materialize
from rich.console import Console
from rich.table import Table

from backfill_platform import settings
from backfill_platform.factory import build_definitions
from backfill_platform.generator.playback import GeneratorConfig, generate_playback_archive

console = Console()


def instance() -> DagsterInstance:
    """The local Dagster instance (runs show up in `make ui`), or an ephemeral one without DAGSTER_HOME."""
    try:
        return DagsterInstance.get()
    except Exception:  # DAGSTER_HOME unset: nothing to show in a UI later, run in memory
        return DagsterInstance.ephemeral()


def range_tags(start: date, end: date, **extra: str) -> dict[str, str]:
    return {
        "dagster/asset_partition_range_start": start.isoformat(),
        "dagster/asset_partition_range_end": end.isoformat(),
        **extra,
    }


def run_demo(start: date, days: int, events_per_day: int) -> None:
    began = time.monotonic()
    last = start + timedelta(days=days - 1)
    console.rule("[bold]backfill_platform demo")
    console.print(f"data directory: {settings.data_dir()}")

    step = time.monotonic()
    archive = settings.data_dir() / "archive" / "playback"
    truth = generate_playback_archive(
        archive, GeneratorConfig(start=start, days=days, events_per_day=events_per_day, seed=7)
    )
    console.print(
        f"1. generated the playback archive: {truth['totals']['files']} hourly files, "
        f"{truth['totals']['lines']:,} lines ({time.monotonic() - step:.1f} s)"
    )

    defs = build_definitions()
    step = time.monotonic()
    result = materialize(
        [defs.get_assets_def(key) for key in [("raw", "playback_events")]],
        resources={"spark": defs.resources["spark"]},
        instance=instance(),
        tags=range_tags(start, last, **{"backfill_platform/reason": "demo: initial load"}),
        selection=AssetSelection.all(),
    )
    if not result.success:
        raise SystemExit("the events run failed; see the log above")
    events_seconds = time.monotonic() - step
    console.print(
        f"2. materialized raw/playback_events for {start}…{last} in one run ({events_seconds:.1f} s)"
    )
    print_events_report(result, truth)
    console.print(f"demo finished in {time.monotonic() - began:.1f} s")


def print_events_report(result, truth: dict) -> None:
    observations = [
        e.event_specific_data.asset_observation
        for e in result.all_events
        if e.event_type_value == "ASSET_OBSERVATION"
    ]
    table = Table(title="events per event-time day (read = written + duplicates + quarantined)")
    for column in ("day", "read", "written", "duplicates", "quarantined", "late", "matches truth"):
        table.add_column(column, justify="right")
    for obs in sorted(observations, key=lambda o: o.partition):
        m = {k: v.value for k, v in obs.metadata.items()}
        expected = truth["partitions"].get(obs.partition, {})
        ok = expected.get("written") == m["written"] and expected.get("records") == m["records"]
        table.add_row(
            obs.partition, f"{m['records']:,}", f"{m['written']:,}", f"{m['duplicates']:,}",
            f"{m['quarantined']:,}", f"{m['late']:,}", "yes" if ok else "[red]NO",
        )  # fmt: skip
    console.print(table)
    materialization = result.get_asset_materialization_events()[0].event_specific_data.materialization
    meta = {k: v.value for k, v in materialization.metadata.items()}
    console.print(
        f"events step: {meta['records']:,} records from {meta['files']} files in {meta['duration_s']} s "
        f"= [bold]{meta['events_per_s']:,.0f} events/s[/bold]"
    )
    checks = result.get_asset_check_evaluations()
    console.print(
        "checks: " + ", ".join(f"{c.check_name} {'passed' if c.passed else 'FAILED'}" for c in checks)
    )
