"""Commands on production and its records: revert, adopt, divergence, drop a shadow, the ledger, runs."""

from __future__ import annotations

import click

from backfill_platform.cli.app import (
    dataset_spec,
    main,
    refusals,
    report_to_dagster,
    spark_session,
    wide_console,
)


@main.command()
@click.option("--dataset", required=True, help="Dataset name, e.g. views_per_title.")
@click.option("--snapshot", type=int, default=None, help="Promotion snapshot id [the latest not reverted].")
@click.option("--reason", default="revert", show_default=True, help="Recorded on the revert's snapshot.")
def revert(dataset: str, snapshot: int | None, reason: str) -> None:
    """Restore exactly the partitions of one promotion to their previous contents (one commit)."""
    from backfill_platform.components.registry import project_specs
    from backfill_platform.pipeline.promotion.jobs import revert_materializations
    from backfill_platform.pipeline.promotion.revert import revert_promotion

    spec = dataset_spec(dataset)
    streams = list(
        project_specs().streams.values()
    )  # a dataset holding a subject never restores an erased one
    with refusals():
        result = revert_promotion(spark_session(), spec, snapshot, reason, streams)
    click.echo(
        f"reverted promotion {result.promotion_snapshot_id} of {dataset} for {', '.join(result.partitions)}: "
        f"snapshot {result.snapshot_id}, {result.rows_restored:,} rows restored"
    )
    report_to_dagster(revert_materializations(spec, result, reason))


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
    from backfill_platform.pipeline.promotion.adopt import adopt as adopt_range
    from backfill_platform.pipeline.promotion.adopt import adopted_rows_by_partition, check_source_name
    from backfill_platform.pipeline.promotion.jobs import adopt_materializations

    check_source_name(source)  # a name that is no table name is refused before Spark starts
    spec, spark = dataset_spec(dataset), spark_session()
    with refusals():
        snapshot = adopt_range(spark, spec, source, start.date(), end.date(), reason)
    click.echo(
        f"adopted {source} [{start.date()}, {end.date()}) into production {dataset}: snapshot {snapshot}"
    )
    rows = adopted_rows_by_partition(spark, spec, snapshot)
    report_to_dagster(adopt_materializations(spec, snapshot, rows, source, reason))


@main.command()
@click.option("--dataset", required=True)
@click.option("--version", default=None, help="Candidate version [the active one].")
def divergence(dataset: str, version: str | None) -> None:
    """Divergence of a candidate version's shadow against production over all history, per partition
    (day, or hour)."""
    from backfill_platform.operations.ledger_report import divergence_table
    from backfill_platform.pipeline.promotion.cutover import history_divergence
    from backfill_platform.pipeline.validation.markdown import markdown_table

    spec = dataset_spec(dataset)
    candidate = version or spec.active_version
    result = history_divergence(spark_session(), spec, candidate)
    console = wide_console()
    console.print(divergence_table(f"{dataset}: {candidate} shadow vs production", result))
    console.print(f"{result.diverging:,} diverging rows ({result.ratio:.2%})")
    if result.sample_rows:
        console.print(markdown_table(result.sample_header, result.sample_rows), markup=False)


@main.command("drop-shadow")
@click.option("--dataset", required=True)
@click.option("--version", required=True)
@click.confirmation_option(prompt="Drop this shadow table and its files?")
def drop_shadow_command(dataset: str, version: str) -> None:
    """Drop the shadow table of a retired (non-active) version."""
    from backfill_platform.pipeline.promotion.cutover import drop_shadow

    with refusals():
        click.echo(f"dropped {drop_shadow(spark_session(), dataset_spec(dataset), version)}")


@main.command("ledger")
@click.option("--dataset", required=True)
@click.option("--version", default=None, help="[the active one]")
def ledger_command(dataset: str, version: str | None) -> None:
    """Per-partition (day, or hour) audit trail of a dataset version, read from the ledger after
    reconciling it with production's history (a promotion, revert or adoption that died before its
    ledger write)."""
    from backfill_platform.operations.ledger_report import promotion_report
    from backfill_platform.pipeline.ledger.reconcile import reconcile_ledger

    spec, spark = dataset_spec(dataset), spark_session()
    repaired = reconcile_ledger(spark, spec)
    if repaired.changed:
        click.echo(
            f"ledger repaired from production's history: {len(repaired.updated)} row(s) corrected, "
            f"{len(repaired.inserted)} adopted row(s) added"
        )
    wide_console().print(promotion_report(spark, dataset, version or spec.active_version))


@main.command("runs")
@click.option(
    "--reap", is_flag=True, help="Fail the runs of this host whose worker is gone; free their slots."
)
def runs_command(reap: bool) -> None:
    """Active Dagster runs: their worker process, whether it is alive, and the pool slots they hold or
    wait for. A run killed without a daemon watching stays STARTED and keeps its slots until reaped."""
    from rich.table import Table

    from backfill_platform.orchestration.instance import instance_from_env
    from backfill_platform.orchestration.runs.reaper import active_runs, reap_dead_runs

    with instance_from_env() as instance:
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
        wide_console().print(table)
