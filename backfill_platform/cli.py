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


@main.command()
@click.argument("path", type=click.Path(path_type=Path))
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
@click.option("--days", type=int, default=3, show_default=True, help="Days of the comparison archive.")
@click.option("--events-per-day", type=int, default=200_000, show_default=True)
@click.option("--repetitions", type=int, default=3, show_default=True, help="Interleaved runs per variant.")
@click.option("--refresh-events-per-day", type=int, default=20_000, show_default=True)
@click.option("--range-days", type=int, default=7, show_default=True, help="One run vs 1-day runs; 0: no.")
@click.option("--short-days", type=int, default=3, show_default=True, help="Memory: short range; 0: skip.")
@click.option("--long-days", type=int, default=30, show_default=True, help="Memory: long range.")
@click.option("--duckdb/--no-duckdb", default=True, show_default=True, help="If the extra is installed.")
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Default: <data>/bench.")
def bench(out: Path | None, **sizes: int) -> None:
    """Compare bare Spark, the events step, the validated backfill and DuckDB (in data/bench)."""
    from backfill_platform.bench.harness import BenchConfig, run_bench

    run_bench(BenchConfig(**sizes, **({"out": out.resolve()} if out else {})))


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


def _quiet_dagster() -> None:
    """Dagster's beta/preview/supersession notices (partitioned checks, backfill policies, the custom
    hour → day mapping) are known and documented; a backfill's output is its report, not them."""
    from dagster import BetaWarning, PreviewWarning, SupersessionWarning

    for category in (BetaWarning, PreviewWarning, SupersessionWarning):
        warnings.filterwarnings("ignore", category=category)
    warnings.filterwarnings("ignore", category=DeprecationWarning, module="dagster")


def _range(start, end) -> tuple[date, date]:
    if end <= start:
        raise click.BadParameter(
            f"--end {end.date()} must be after --start {start.date()}", param_hint="--end"
        )
    return start.date(), end.date()


@main.command()
@click.option("--stream", default=None, help="Stream name; every dataset built on it is shown.")
@click.option("--dataset", default=None, help="Dataset name (its source stream is planned).")
@click.option("--start", type=click.DateTime(["%Y-%m-%d"]), required=True, help="First event day (UTC).")
@click.option("--end", type=click.DateTime(["%Y-%m-%d"]), required=True, help="Day after the last one.")
def plan(stream: str | None, dataset: str | None, start, end) -> None:
    """What a backfill of [--start, --end) would read and redo, before running anything.

    Per event-time day: its read window (widened by the stream's clock skew before and allowed
    lateness after), the archive files, bytes and lines in it, the ingestion hours it needs that have
    no file, and what production holds for it (version @ snapshot, from the ledger); then the totals
    and an estimate from the events throughput the ledger measured. Counting lines reads every file
    of the range once (stream-decompressed, bounded memory): expect it to take a while on large
    archives. Starts no Spark session and reads no table but the ledger (PyIceberg).

    --end is exclusive, as for `adopt`: --start 2026-10-01 --end 2026-10-03 plans two days.
    """
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

    from backfill_platform.operations.plan import build_plan, plan_summary, plan_table
    from backfill_platform.specs.loader import load_specs

    _quiet_dagster()
    if (stream is None) == (dataset is None):
        raise click.UsageError("give exactly one of --stream and --dataset")
    first, after = _range(start, end)
    specs = load_specs()
    if dataset is not None:
        datasets = [_dataset(dataset)]
        stream = datasets[0].source_stream
    elif stream not in specs.streams:
        raise click.BadParameter(
            f"unknown stream {stream!r}; known: {sorted(specs.streams)}", param_hint="--stream"
        )
    else:
        datasets = [d for d in specs.datasets.values() if d.source_stream == stream]
    console = _console()
    with Progress(
        "counting lines",
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task("lines", total=None)

        def counted(archive_file, total_bytes: int) -> None:
            progress.update(task, total=total_bytes, advance=archive_file.size)

        result = build_plan(specs.streams[stream], datasets, first, after, on_file=counted)
    console.print(plan_table(result))
    for line in plan_summary(result):
        console.print(line)


@main.command()
@click.option("--dataset", required=True, help="Dataset name, e.g. views_per_title.")
@click.option("--start", type=click.DateTime(["%Y-%m-%d"]), required=True, help="First event day (UTC).")
@click.option("--end", type=click.DateTime(["%Y-%m-%d"]), required=True, help="Day after the last one.")
@click.option("--reason", default=None, help="Why; recorded as run tag and on the promotion snapshot.")
@click.option("--ticket", default=None, help="Ticket id; recorded like --reason.")
@click.option("--dry-run", is_flag=True, help="Events and shadow with their checks; never promote.")
@click.option(
    "--policy",
    type=click.Choice(["all", "per-day"]),
    default="all",
    show_default=True,
    help="all: one failed day holds back the whole range; per-day: promote the days that passed.",
)
@click.option(
    "--log-level",
    default="CRITICAL",
    show_default=True,
    help="Dagster's console log level (failures are reported from the run's events either way).",
)
@click.option(
    "--instance",
    "instance_url",
    default=None,
    metavar="URL",
    help="Submit to the Dagster webserver at URL (e.g. http://127.0.0.1:3000) as a backfill and wait.",
)
def backfill(
    dataset: str,
    start,
    end,
    reason,
    ticket,
    dry_run: bool,
    policy: str,
    log_level: str,
    instance_url: str | None,
) -> None:
    """Re-derive [--start, --end): events → active shadow → checks → production, in one Dagster run.

    The run is the code location's asset job, executed in this process and recorded in the Dagster
    instance of DAGSTER_HOME (without it: <BACKFILL_PLATFORM_DATA>/dagster; visible in the UI), tagged
    with the reason, ticket and promotion policy; progress shows its steps. With --instance URL it is
    submitted to that running webserver instead (a Dagster backfill its daemon runs, as the UI
    launches it) and followed until it ends. Either way it ends with the per-day report from the
    ledger and, per failed day, the check and its numbers (read from the run's check evaluations).
    Exits 1 when any day failed a blocking check or was held back.

    --end is exclusive, as for `adopt`: --start 2026-10-01 --end 2026-10-03 runs two days.
    """
    from backfill_platform.operations.backfill import (
        POLICIES,
        BackfillRequest,
        backfill_update,
        instance_from_env,
        problem_lines,
        progress_display,
        report_table,
        run_backfill,
        step_update,
        submit_backfill,
    )
    from backfill_platform.operations.submit import SubmitError
    from backfill_platform.specs.loader import load_specs

    _quiet_dagster()
    first, after = _range(start, end)
    spec = _dataset(dataset)
    stream = load_specs().streams[spec.source_stream]
    request = BackfillRequest(
        spec, stream, first, after, reason, ticket, dry_run, POLICIES[policy], log_level.upper()
    )
    console = _console()
    what = "events → shadow → checks" + ("" if dry_run else " → production")
    title = f"{dataset} {first}…{after} (exclusive): {what}"
    if instance_url:
        with _refusals(), progress_display(console, f"{title}, backfill at {instance_url}") as update:
            try:
                outcome = submit_backfill(request, instance_url, on_progress=backfill_update(update))
            except SubmitError as error:
                raise click.ClickException(str(error)) from None
    else:
        running = progress_display(console, f"{title}, one run")
        with instance_from_env() as instance, _refusals(), running as update:
            outcome = run_backfill(request, instance, on_step=step_update(update))
    console.print(report_table(outcome))
    for line in problem_lines(outcome):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    if outcome.held_back:
        console.print(
            f"held back: {', '.join(d.isoformat() for d in outcome.held_back)}; production keeps them"
        )
    if not outcome.ok:
        raise SystemExit(1)
    console.print("dry run: production untouched" if dry_run else f"promoted {len(request.days)} day(s)")


@main.command("status")
@click.option("--dataset", default=None, help="One dataset [all].")
def status_command(dataset: str | None) -> None:
    """Per dataset and day: promoted (version @ snapshot), provisional, blocked (failed checks), stale
    (events re-derived since validated), validated or adopted — from the ledger, through PyIceberg (no
    Spark). `ledger --dataset D` first repairs the ledger if a process died after a production commit."""
    from backfill_platform.operations.status import status, status_table
    from backfill_platform.specs.loader import load_specs

    _quiet_dagster()
    datasets = [_dataset(dataset)] if dataset else list(load_specs().datasets.values())
    _console().print(status_table(status(datasets)))


@main.command("report")
@click.option("--backfill", "ident", required=True, help="A Dagster backfill id or a run id.")
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Also write the markdown here.")
def report_command(ident: str, out: Path | None) -> None:
    """What one backfill or run did, per dataset and day, as markdown: archive records, events written,
    duplicates, quarantined, late, shadow rows and hash sum, diverging rows, checks, and the production
    snapshot(s) it promoted and when — from the ledger and production's snapshots, through PyIceberg (no
    Spark). For a backfill id, the runs the Dagster instance knows for it are included."""
    from backfill_platform.operations.report import build_report, report_markdown

    _quiet_dagster()
    with _refusals():
        markdown = report_markdown(build_report(ident))
    if out is not None:
        out.write_text(markdown)
    click.echo(markdown, nl=False)


@main.command("sweep")
@click.option("--dataset", required=True, help="Dataset name, e.g. views_per_title.")
@click.option("--start", type=click.DateTime(["%Y-%m-%d"]), default=None, help="First day [production's].")
@click.option("--end", type=click.DateTime(["%Y-%m-%d"]), default=None, help="Day after the last one.")
def sweep_command(dataset: str, start, end) -> None:
    """Check every day of production (or of [--start, --end)) against its events and its ledger record.

    Per bucket (day, or day and hour) the rows and reconciliation sums the events imply against
    production's (the shadow checks, run on production), and per day production's fingerprint against
    the one the ledger recorded at promotion (rows changed behind the platform's back). Prints the
    divergent days and, per contiguous span of them, the `backfill` command that re-derives it. Exits
    1 when it proposes a backfill, 0 when nothing diverges.
    """
    from backfill_platform.operations.sweep import sweep, sweep_table
    from backfill_platform.specs.loader import load_specs

    _quiet_dagster()
    if (start is None) != (end is None):
        raise click.UsageError("give both --start and --end, or neither (every day of production)")
    first, after = _range(start, end) if start is not None else (None, None)
    spec = _dataset(dataset)
    stream = load_specs().streams[spec.source_stream]
    console = _console()
    with console.status(f"sweeping {dataset}: starting Spark") as status, _refusals():
        result = sweep(_spark(), spec, stream, first, after, step=lambda m: status.update(f"{dataset}: {m}"))
    if not result.days:
        console.print(f"{dataset}: production holds no day{'' if first is None else ' in that range'}")
        return
    console.print(sweep_table(result))
    if not result.divergent:
        console.print(
            f"no divergent day in {len(result.days)} day(s): production agrees with its events and the ledger"
        )
        return
    for day in result.days:
        for problem in day.problems:
            console.print(f"{day.day} {problem}", markup=False, highlight=False, soft_wrap=True)
    console.print(f"{len(result.divergent)} divergent day(s); proposed backfill (--end exclusive):")
    for command in result.commands():
        console.print(f"  {command}", markup=False, highlight=False, soft_wrap=True)
    raise SystemExit(1)


@main.command("replay")
@click.option("--stream", required=True, help="Stream whose validated events are replayed.")
@click.option("--start", type=click.DateTime(["%Y-%m-%d"]), required=True, help="First event day (UTC).")
@click.option("--end", type=click.DateTime(["%Y-%m-%d"]), required=True, help="Day after the last one.")
@click.option(
    "--to-kinesis", "target", required=True, help="Backfill Kinesis stream (declared in the stream spec)."
)
@click.option(
    "--max-records-per-second",
    type=click.IntRange(min=1),
    default=500,
    show_default=True,
    help="Rate cap; the target's shard limits (1,000 records and 1 MiB per second each) apply too.",
)
@click.option(
    "--checkpoint",
    type=click.Path(path_type=Path),
    default=None,
    help="Checkpoint file [data/replay/<stream>/<target>_<start>_<end>.json].",
)
def replay_command(stream: str, start, end, target: str, max_records_per_second: int, checkpoint) -> None:
    """Republish the validated events of [--start, --end) to a separate Kinesis backfill stream.

    Reads the stream's events table (deduplicated, upcast to the latest schema) through PyIceberg, in
    (event_time, event_id) order from one pinned snapshot, and sends each event as one JSON object with
    its event id as partition key, in PutRecords batches within Kinesis's limits. Refuses the stream's
    live Kinesis stream and any stream not in its spec's backfill_kinesis_streams. The checkpoint is
    rewritten after every acknowledged batch: run the same command again to resume after the last one
    (at least once; a killed replay re-sends at most one batch, so consumers dedupe by event id).

    --end is exclusive, as for `backfill`: --start 2026-10-01 --end 2026-10-03 replays two days.
    """
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from backfill_platform.operations.ledger_view import open_catalog
    from backfill_platform.replay.kinesis import KinesisResource, ReplayError
    from backfill_platform.replay.runner import ReplayRequest, run_replay
    from backfill_platform.specs.loader import load_specs

    _quiet_dagster()
    first, after = _range(start, end)
    streams = load_specs().streams
    if stream not in streams:
        raise click.BadParameter(
            f"unknown stream {stream!r}; known: {sorted(streams)}", param_hint="--stream"
        )
    request = ReplayRequest(streams[stream], first, after, target, max_records_per_second, checkpoint)
    console = _console()
    progress = Progress(
        TextColumn(f"{stream} → {target}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]:,.0f} records/s"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
    )
    began: list[float] = []

    def started(state) -> None:
        import time

        began.append(time.monotonic())
        began.append(state.delivered)
        if state.delivered:
            console.print(
                f"resuming after {state.delivered:,} acknowledged events ({request.checkpoint_path})"
            )
        progress.add_task("replay", total=state.total, completed=state.delivered, rate=0.0)

    def advanced(state, _batch: int) -> None:
        import time

        elapsed = time.monotonic() - began[0]
        rate = (state.delivered - began[1]) / elapsed if elapsed else 0.0
        progress.update(progress.task_ids[0], completed=state.delivered, rate=rate)

    try:
        with _refusals(), progress:
            result = run_replay(request, KinesisResource().get_client(), open_catalog(), started, advanced)
    except ReplayError as error:
        raise click.ClickException(str(error)) from error
    state = result.checkpoint
    if result.already_done:
        console.print(
            f"already complete: {state.delivered:,} events of {stream} [{state.start}, {state.end}) were "
            f"delivered to {target} (checkpoint {request.checkpoint_path}; delete it to replay again)"
        )
        return
    console.print(
        f"replayed {state.delivered:,} events of {stream} [{state.start}, {state.end}) (exclusive) to "
        f"{target}: {result.sent:,} sent by this run in {result.seconds:.1f} s "
        f"({result.records_per_second:,.0f} records/s, {result.shards} shard(s), {result.calls} PutRecords "
        f"calls, {result.retried_records} records retried); checkpoint {request.checkpoint_path}"
    )


if __name__ == "__main__":
    main()
