"""Set-up commands: generate a demo archive, run the demo, start a project, benchmark."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import click

from backfill_platform import settings
from backfill_platform.cli.app import folder_or_new, main


@main.command()
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    callback=folder_or_new,
    default=None,
    help="Archive folder [data/archive/playback].",
)
@click.option(
    "--start", type=click.DateTime(["%Y-%m-%d"]), default="2026-10-01", help="First event day (UTC)."
)
@click.option("--days", type=int, default=7, show_default=True)
@click.option("--events-per-day", type=int, default=100_000, show_default=True)
@click.option("--seed", type=int, default=7, show_default=True)
@click.option(
    "--impressions/--no-impressions",
    default=True,
    show_default=True,
    help="Also write the impressions of its plays in an `impressions` folder beside it.",
)
def generate(out: Path | None, start, days: int, events_per_day: int, seed: int, impressions: bool) -> None:
    """Write a deterministic synthetic playback archive and its truth (`_truth.json`), and the
    impressions that led to its plays (the `impressions` stream)."""
    from backfill_platform.devtools.generator.impressions import generate_impressions_archive
    from backfill_platform.devtools.generator.playback import GeneratorConfig, generate_playback_archive

    root = out or settings.data_dir() / "archive" / "playback"
    config = GeneratorConfig(start=start.date(), days=days, events_per_day=events_per_day, seed=seed)
    truth = generate_playback_archive(root, config)
    totals = truth["totals"]
    click.echo(
        f"wrote {totals['files']} files, {totals['lines']:,} lines, {totals['bytes']:,} bytes to {root}"
    )
    if impressions:
        shown = generate_impressions_archive(root.parent / "impressions", root)["totals"]
        click.echo(f"wrote {shown['files']} files, {shown['lines']:,} lines to {root.parent / 'impressions'}")


@main.command()
@click.option("--days", type=int, default=7, show_default=True)
@click.option("--events-per-day", type=int, default=100_000, show_default=True)
def demo(days: int, events_per_day: int) -> None:
    """Generate the demo archive and run the whole story end to end, ending in a report."""
    from backfill_platform.devtools.demo.story import run_demo

    run_demo(start=date(2026, 10, 1), days=days, events_per_day=events_per_day)


@main.command()
@click.argument("path", type=click.Path(path_type=Path), callback=folder_or_new)
def init(path: Path) -> None:
    """Start a dg project for your own streams and datasets at PATH (named after its folder)."""
    from backfill_platform.components.project import init_project

    try:
        written = init_project(path)
    except (FileExistsError, ValueError) as refusal:
        raise click.ClickException(str(refusal)) from refusal
    for file in written:
        click.echo(f"wrote {file}")
    click.echo(
        f"next: cd {path} && dg scaffold defs backfill_platform.components.Stream <stream> "
        "(then .Dataset <dataset>), fill in the defs.yaml files, dg check defs"
    )


@main.command()
@click.option("--days", type=int, default=3, show_default=True, help="Days of the comparison archive.")
@click.option("--events-per-day", type=int, default=200_000, show_default=True)
@click.option("--repetitions", type=int, default=3, show_default=True, help="Interleaved runs per variant.")
@click.option("--refresh-events-per-day", type=int, default=20_000, show_default=True)
@click.option("--range-days", type=int, default=7, show_default=True, help="One run vs 1-day runs; 0: no.")
@click.option("--short-days", type=int, default=3, show_default=True, help="Memory: short range; 0: skip.")
@click.option("--long-days", type=int, default=30, show_default=True, help="Memory: long range.")
@click.option("--duckdb/--no-duckdb", default=True, show_default=True, help="If the extra is installed.")
@click.option(
    "--scale", is_flag=True, help="Add (f) the big day, (g) many small files, (h) copies of the big day."
)
@click.option("--big-days", type=int, default=2, show_default=True, help="(f): days.")
@click.option(
    "--big-events-per-day", type=int, default=1_500_000, show_default=True, help="(f): events a day."
)
@click.option(
    "--huge-copies",
    type=int,
    default=10,
    show_default=True,
    help="(h): the big day's archive this many times over, for how cost grows; 0: not run.",
)
@click.option("--files-days", type=int, default=365, show_default=True, help="(g): days.")
@click.option("--files-events-per-day", type=int, default=300, show_default=True, help="(g): events a day.")
@click.option("--files-per-hour", type=int, default=3, show_default=True, help="(g): files an hour.")
@click.option(
    "--other-line",
    default="",
    help="The Python of another Spark line's environment: (a)-(c), (f) and (h) run on it too.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    callback=folder_or_new,
    default=None,
    help="Default: <data>/bench.",
)
def bench(out: Path | None, **options: Any) -> None:
    """Compare bare Spark, the events step, the validated backfill and DuckDB (in data/bench)."""
    from backfill_platform.devtools.bench.harness import BenchConfig, run_bench

    run_bench(BenchConfig(**options, **({"out": out.resolve()} if out else {})))
