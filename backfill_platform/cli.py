"""`backfill-platform`: the command line of the platform (generate a demo archive, run the demo, ...)."""

from __future__ import annotations

import warnings
from datetime import date
from pathlib import Path

import click

from backfill_platform import settings


@click.group()
def main() -> None:
    """Re-derive history from an event archive safely."""
    # Dagster flags several APIs this platform relies on as beta; say so once in the docs, not per call.
    warnings.filterwarnings("ignore", category=Warning, module="dagster")
    warnings.filterwarnings("ignore", message=".*is currently in (beta|preview).*")


@main.command()
@click.option(
    "--out", type=click.Path(path_type=Path), default=None, help="Archive folder [data/archive/playback]."
)
@click.option(
    "--start", type=click.DateTime(["%Y-%m-%d"]), default="2026-10-01", help="First event day (UTC)."
)
@click.option("--days", type=int, default=7, show_default=True)
@click.option("--events-per-day", type=int, default=100_000, show_default=True)
@click.option("--seed", type=int, default=7, show_default=True)
def generate(out: Path | None, start, days: int, events_per_day: int, seed: int) -> None:
    """Write a deterministic synthetic playback archive and its truth (`_truth.json`)."""
    from backfill_platform.generator.playback import GeneratorConfig, generate_playback_archive

    root = out or settings.data_dir() / "archive" / "playback"
    config = GeneratorConfig(start=start.date(), days=days, events_per_day=events_per_day, seed=seed)
    truth = generate_playback_archive(root, config)
    totals = truth["totals"]
    click.echo(
        f"wrote {totals['files']} files, {totals['lines']:,} lines, {totals['bytes']:,} bytes to {root}"
    )


@main.command()
@click.option("--days", type=int, default=7, show_default=True)
@click.option("--events-per-day", type=int, default=100_000, show_default=True)
def demo(days: int, events_per_day: int) -> None:
    """Generate the demo archive and run the whole story end to end, ending in a report."""
    from backfill_platform.demo import run_demo

    run_demo(start=date(2026, 10, 1), days=days, events_per_day=events_per_day)


if __name__ == "__main__":
    main()
