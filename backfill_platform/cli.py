"""`backfill-platform`: the command line of the platform (generate a demo archive, run the demo, ...)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def _refusals() -> Iterator[None]:
    """A refusal of the platform is an answer, not a crash: print it and exit non-zero."""
    from backfill_platform.promotion.adopt import AdoptRefused
    from backfill_platform.promotion.gate import PromotionRefused
    from backfill_platform.promotion.revert import RevertRefused

    try:
        yield
    except (AdoptRefused, PromotionRefused, RevertRefused, ValueError) as refusal:
        raise click.ClickException(str(refusal)) from refusal


@main.command()
@click.option("--days", type=int, default=3, show_default=True)
@click.option("--events-per-day", type=int, default=200_000, show_default=True)
def bench(days: int, events_per_day: int) -> None:
    """Measure events/s of the events step and of the whole validated backfill (in data/bench)."""
    from backfill_platform.bench import run_bench

    run_bench(days, events_per_day)


def _spark():
    from backfill_platform.lakehouse.resources import catalog_from_env, spark_from_env

    return spark_from_env(catalog_from_env(for_dagster=False)).spark_session


def _dataset(name: str):
    from backfill_platform.specs.loader import load_specs

    datasets = load_specs().datasets
    if name not in datasets:
        raise click.BadParameter(
            f"unknown dataset {name!r}; known: {sorted(datasets)}", param_hint="--dataset"
        )
    return datasets[name]


def _console():
    from rich.console import Console

    return Console(width=160)


def _report_to_dagster(materializations: list) -> None:
    """Record in the Dagster instance what production holds now for each day a command changed, so the
    UI's partitions of `prod/<dataset>_production` match the table. Only where an instance is configured."""
    import os

    if not os.environ.get("DAGSTER_HOME"):
        click.echo("note: DAGSTER_HOME is not set, so the Dagster UI was not told about these days")
        return
    from dagster import DagsterInstance

    with DagsterInstance.get() as instance:
        for materialization in materializations:
            instance.report_runless_asset_event(materialization)
    click.echo(f"reported {len(materializations)} day(s) of production to the Dagster instance")


@main.command()
@click.option("--dataset", required=True, help="Dataset name, e.g. views_per_title.")
@click.option("--snapshot", type=int, default=None, help="Promotion snapshot id [the latest not reverted].")
@click.option("--reason", default="revert", show_default=True, help="Recorded on the revert's snapshot.")
def revert(dataset: str, snapshot: int | None, reason: str) -> None:
    """Restore exactly the partitions of one promotion to their previous contents (one commit)."""
    from backfill_platform.promotion.jobs import revert_materializations
    from backfill_platform.promotion.revert import revert_promotion

    spec = _dataset(dataset)
    with _refusals():
        result = revert_promotion(_spark(), spec, snapshot, reason)
    click.echo(
        f"reverted promotion {result.promotion_snapshot_id} of {dataset} for {', '.join(result.days)}: "
        f"snapshot {result.snapshot_id}, {result.rows_restored:,} rows restored"
    )
    _report_to_dagster(revert_materializations(spec, result, reason))


@main.command()
@click.option("--dataset", required=True)
@click.option(
    "--from", "source", required=True, help="Existing Iceberg table, e.g. lake.legacy.views_per_title."
)
@click.option("--start", type=click.DateTime(["%Y-%m-%d"]), required=True, help="First day to adopt.")
@click.option("--end", type=click.DateTime(["%Y-%m-%d"]), required=True, help="Day after the last one.")
@click.option("--reason", required=True, help="Why this unvalidated data is accepted; recorded.")
def adopt(dataset: str, source: str, start, end, reason: str) -> None:
    """Register existing data as production (recorded, unvalidated; never overwrites)."""
    from backfill_platform.promotion.adopt import adopt as adopt_range
    from backfill_platform.promotion.adopt import adopted_rows_by_day
    from backfill_platform.promotion.jobs import adopt_materializations

    spec, spark = _dataset(dataset), _spark()
    with _refusals():
        snapshot = adopt_range(spark, spec, source, start.date(), end.date(), reason)
    click.echo(
        f"adopted {source} [{start.date()}, {end.date()}) into production {dataset}: snapshot {snapshot}"
    )
    rows = adopted_rows_by_day(spark, spec, snapshot)
    _report_to_dagster(adopt_materializations(spec, snapshot, rows, source, reason))


@main.command()
@click.option("--dataset", required=True)
@click.option("--version", default=None, help="Candidate version [the active one].")
def divergence(dataset: str, version: str | None) -> None:
    """Divergence of a candidate version's shadow against production over all history."""
    from backfill_platform.promotion.cutover import history_divergence
    from backfill_platform.report import divergence_table

    spec = _dataset(dataset)
    candidate = version or spec.active_version
    result = history_divergence(_spark(), spec, candidate)
    console = _console()
    console.print(divergence_table(f"{dataset}: {candidate} shadow vs production", result))
    console.print(f"{result.diverging:,} diverging rows ({result.ratio:.2%})")
    if result.sample_markdown:
        console.print(result.sample_markdown)


@main.command("drop-shadow")
@click.option("--dataset", required=True)
@click.option("--version", required=True)
@click.confirmation_option(prompt="Drop this shadow table and its files?")
def drop_shadow_command(dataset: str, version: str) -> None:
    """Drop the shadow table of a retired (non-active) version."""
    from backfill_platform.promotion.cutover import drop_shadow

    with _refusals():
        click.echo(f"dropped {drop_shadow(_spark(), _dataset(dataset), version)}")


@main.command("ledger")
@click.option("--dataset", required=True)
@click.option("--version", default=None, help="[the active one]")
def ledger_command(dataset: str, version: str | None) -> None:
    """Per-day audit trail of a dataset version, read from the ledger after reconciling it with
    production's history (a promotion, revert or adoption that died before its ledger write)."""
    from backfill_platform.ledger.reconcile import reconcile_ledger
    from backfill_platform.report import promotion_report

    spec, spark = _dataset(dataset), _spark()
    repaired = reconcile_ledger(spark, spec)
    if repaired.changed:
        click.echo(
            f"ledger repaired from production's history: {len(repaired.updated)} row(s) corrected, "
            f"{len(repaired.inserted)} adopted row(s) added"
        )
    _console().print(promotion_report(spark, dataset, version or spec.active_version))


@main.command("runs")
@click.option(
    "--reap", is_flag=True, help="Fail the runs of this host whose worker is gone; free their slots."
)
def runs_command(reap: bool) -> None:
    """Active Dagster runs: their worker process, whether it is alive, and the pool slots they hold or
    wait for. A run killed without a daemon watching stays STARTED and keeps its slots until reaped."""
    from dagster import DagsterInstance
    from rich.table import Table

    from backfill_platform.runs.reaper import active_runs, reap_dead_runs

    with DagsterInstance.get() as instance:
        if reap:
            reaped = reap_dead_runs(instance, by="backfill-platform runs --reap")
            click.echo(f"failed {len(reaped)} dead run(s) and freed their slots: {', '.join(reaped) or '-'}")
        table = Table("run", "status", "job", "worker", "alive", "holds", "waits for")
        for run in active_runs(instance):
            table.add_row(
                run.run_id,
                run.status,
                run.job_name,
                str(run.worker or "not recorded"),
                run.liveness.value,
                ", ".join(run.holds) or "-",
                ", ".join(run.waits_for) or "-",
            )
        _console().print(table)


if __name__ == "__main__":
    main()
