"""The backfill job from the command line: plan, backfill, status, report, sweep."""

from __future__ import annotations

from pathlib import Path

import click

from backfill_platform.cli.app import (
    dataset_spec,
    main,
    partition_range,
    quiet_dagster,
    range_options,
    refusals,
    regular_file_or_new,
    spark_session,
    wide_console,
    write_regular_file,
)


@main.command()
@click.option("--stream", default=None, help="Stream name; every dataset built on it is shown.")
@click.option("--dataset", default=None, help="Dataset name (its source stream is planned).")
@range_options("First event day (UTC), or hour (2026-10-01T14:00) of an hourly stream or dataset.")
def plan(stream: str | None, dataset: str | None, start, end) -> None:
    """What a backfill of [--start, --end) would read and redo, before running anything (for a dataset
    with several sources, one plan per source).

    Per event-time partition (a day, or an hour of an hourly stream): its read window (widened by the
    stream's clock skew before and allowed lateness after), the archive files, bytes and lines in it,
    the ingestion hours it needs that have no file, and what production holds for it (version @
    snapshot, from the ledger); then the totals and an estimate from the events throughput the ledger
    measured. Counting lines reads every file of the range once (stream-decompressed, bounded memory):
    expect it to take a while on large archives. Starts no Spark session and reads no table but the
    ledger (PyIceberg).

    --end is exclusive, as for `adopt`: --start 2026-10-01 --end 2026-10-03 plans two days (every hour
    of them for an hourly stream); --start 2026-10-01T14:10 --end 2026-10-01T15:40 plans 14:00 and 15:00.
    A dataset of days over an hourly stream is planned by its days (a time zone's days with `partition_timezone`),
    each with the UTC hours it spans (23 to 25 around DST) and the files of all of them.
    """
    from backfill_platform.components.registry import find_project, project_specs
    from backfill_platform.operations.plan import lookback_start, plan_summary, plan_table
    from backfill_platform.operations.ranges import bound, widened

    quiet_dagster()
    if (stream is None) == (dataset is None):
        raise click.UsageError("give exactly one of --stream and --dataset")
    specs = project_specs()
    if dataset is not None:
        datasets = [dataset_spec(dataset)]
        streams = datasets[0].stream_names  # a join re-derives every source's events
    elif stream not in specs.streams:
        raise click.BadParameter(
            f"unknown stream {stream!r} in the project at {find_project().root}; known: {sorted(specs.streams)}",
            param_hint="--stream",
        )
    else:
        datasets = [d for d in specs.datasets.values() if stream in d.stream_names]
        streams = [stream]
    grain = datasets[0].grain if dataset is not None else specs.streams[stream].grain
    whole = partition_range(start, end, grain)
    first, after = (bound(grain, at) for at in whole)  # instants: a day is where it starts on its grain
    console = wide_console()
    if note := widened(grain, (start, end), whole):
        console.print(note, markup=False, highlight=False)
    for name in streams:
        stream_spec = specs.streams[name]
        # A dataset's plan also lists the source partitions its lookback reads before the range (the
        # backfill ingests them, or validates them as already ingested and unchanged, in the same run).
        read_from = lookback_start(datasets[0], stream_spec, first) if dataset is not None else None
        # A dataset of days over an hourly stream is planned by its days (each with the hours it spans).
        days_of = datasets[0].grain if dataset is not None else None
        result = counted_plan(console, stream_spec, datasets, first, after, read_from, days_of)
        console.print(plan_table(result))
        for line in plan_summary(result):
            console.print(line)


def counted_plan(console, stream, datasets, first, after, read_from=None, days_of=None):
    """`build_plan` of one stream with a progress bar of the bytes counted."""
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

    from backfill_platform.operations.plan import build_plan

    with Progress(
        f"counting lines of {stream.name}",
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task("lines", total=None)

        def counted(archive_file, total_bytes: int) -> None:
            progress.update(task, total=total_bytes, advance=archive_file.size)

        return build_plan(
            stream, datasets, first, after, on_file=counted, read_from=read_from, days_of=days_of
        )


@main.command()
@click.option("--dataset", required=True, help="Dataset name, e.g. views_per_title.")
@range_options("First event day (UTC), or hour (2026-10-01T14:00) of an hourly dataset.")
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
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"], case_sensitive=False),
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
@click.option(
    "--per-day/--summed",
    "per_day",
    default=None,
    help="A report row per day, or passed days summed per month [per day up to 31 days].",
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
    per_day: bool | None,
) -> None:
    """Re-derive [--start, --end): events → active shadow → checks → production, in one Dagster run.

    The run is the code location's asset job, executed in this process and recorded in the Dagster
    instance of DAGSTER_HOME (without it: <BACKFILL_PLATFORM_DATA>/dagster; visible in the UI), tagged
    with the reason, ticket and promotion policy; progress shows its steps. With --instance URL it is
    submitted to that running webserver instead (a Dagster backfill its daemon runs, as the UI
    launches it) and followed until it ends. Either way it ends with the per-day report from the
    ledger and, per failed day, the check and its numbers (read from the run's check evaluations).
    Exits 1 when any day failed a blocking check or was held back.

    --end is exclusive, as for `adopt`: --start 2026-10-01 --end 2026-10-03 runs two days. For an hourly
    dataset give hours (UTC): --start 2026-10-01T14:10 --end 2026-10-01T15:40 runs 14:00 and 15:00.
    """
    from backfill_platform.components.registry import project_specs
    from backfill_platform.masking import has_userinfo, mask
    from backfill_platform.operations.backfill import (
        POLICIES,
        BackfillRequest,
        partitions_before_lines,
        problem_lines,
        report_table,
        throughput_line,
    )
    from backfill_platform.operations.graphql import SubmitError
    from backfill_platform.operations.in_process import run_backfill
    from backfill_platform.operations.progress import backfill_update, progress_display, step_update
    from backfill_platform.operations.ranges import widened
    from backfill_platform.operations.submit import submit_backfill
    from backfill_platform.orchestration.instance import instance_from_env

    quiet_dagster()
    spec = dataset_spec(dataset)
    first, after = partition_range(start, end, spec.grain)
    if note := widened(spec.grain, (start, end), (first, after)):
        wide_console().print(note, markup=False, highlight=False)
    streams = project_specs().streams
    sources = tuple(streams[name] for name in spec.stream_names)
    request = BackfillRequest(
        spec, sources[0], first, after, reason, ticket, dry_run, POLICIES[policy], log_level.upper(), sources
    )
    console = wide_console()
    what = "events → shadow → checks" + ("" if dry_run else " → production")
    shown = (first, after) if spec.grain.unit == "day" else (request.days[0], spec.grain.key(after))
    title = f"{dataset} {shown[0]}…{shown[1]} (exclusive): {what}"
    if instance_url:
        if has_userinfo(instance_url):
            raise click.ClickException(
                f"--instance {mask(instance_url)} holds credentials before its host: give the webserver's "
                "URL without them (the platform sends none, and a URL is shown in messages)"
            )
        with refusals(), progress_display(console, f"{title}, backfill at {mask(instance_url)}") as update:
            try:
                outcome = submit_backfill(request, instance_url, on_progress=backfill_update(update))
            except SubmitError as error:
                raise click.ClickException(str(error)) from None
    else:
        runs = len(request.runs())
        running = progress_display(console, f"{title}, {'one run' if runs == 1 else f'{runs} runs'}")
        with instance_from_env() as instance, refusals(), running as update:
            outcome = run_backfill(request, instance, on_step=step_update(update))
    console.print(report_table(outcome, per_day))
    if throughput := throughput_line(outcome):
        console.print(throughput, markup=False, highlight=False)
    for line in partitions_before_lines(outcome):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    for line in problem_lines(outcome):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    if outcome.held_back:
        console.print(f"held back: {', '.join(outcome.held_back)}; production keeps them")
    if not outcome.ok:
        raise SystemExit(1)
    promoted = f"promoted {len(request.days)} {spec.grain.unit}(s)"
    console.print("dry run: production untouched" if dry_run else promoted)


@main.command("status")
@click.option("--dataset", default=None, help="One dataset [all].")
def status_command(dataset: str | None) -> None:
    """Per dataset and partition (day, or hour of an hourly dataset): promoted (version @ snapshot),
    provisional, blocked (failed checks), stale (events re-derived since validated), validated or adopted
    — from the ledger, through PyIceberg (no Spark). `ledger --dataset D` first repairs the ledger if a
    process died after a production commit."""
    from backfill_platform.components.registry import project_specs
    from backfill_platform.operations.status import status, status_table
    from backfill_platform.pipeline.erasure.subjects import erasure_coverage

    quiet_dagster()
    specs = project_specs()
    datasets = [dataset_spec(dataset)] if dataset else list(specs.datasets.values())
    console = wide_console()
    console.print(status_table(status(datasets)))
    for name in sorted({stream for spec in datasets for stream in spec.stream_names}):
        console.print(erasure_coverage(specs.streams[name]), markup=False)


@main.command("report")
@click.option("--backfill", "ident", required=True, help="A Dagster backfill id or a run id.")
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    callback=regular_file_or_new,
    default=None,
    help="Also write the markdown here (a regular file, or a new one).",
)
def report_command(ident: str, out: Path | None) -> None:
    """What one backfill or run did, per dataset and partition (day, or hour), as markdown: archive
    records, events written, duplicates, quarantined, late, shadow rows and hash sum, diverging rows,
    checks, and the production snapshot(s) it promoted and when — from the ledger and production's
    snapshots, through PyIceberg (no Spark). For a backfill id, the runs the Dagster instance knows for
    it are included."""
    from backfill_platform.operations.report import build_report, report_markdown

    quiet_dagster()
    with refusals():
        markdown = report_markdown(build_report(ident))
    if out is not None:
        write_regular_file(out, markdown)
    click.echo(markdown, nl=False)


@main.command("sweep")
@click.option("--dataset", required=True, help="Dataset name, e.g. views_per_title.")
@range_options("First day, or hour (2026-10-01T14:00) of an hourly dataset [production's].", required=False)
def sweep_command(dataset: str, start, end) -> None:
    """Check every partition of production (or of [--start, --end)) against its events and its ledger
    record.

    Per bucket (the partition, or day and hour) the rows and reconciliation sums the events imply
    against production's (the shadow checks, run on production), and per partition (day, or hour of an
    hourly dataset) production's fingerprint against the one the ledger recorded at promotion (rows
    changed behind the platform's back). Prints the divergent partitions and, per contiguous span of
    them, the `backfill` command that re-derives it. Exits 1 when it proposes a backfill, 0 when
    nothing diverges.
    """
    from backfill_platform.components.registry import project_specs
    from backfill_platform.operations.ranges import widened
    from backfill_platform.operations.sweep import sweep, sweep_table

    quiet_dagster()
    if (start is None) != (end is None):
        raise click.UsageError("give both --start and --end, or neither (all of production)")
    spec = dataset_spec(dataset)
    noun = spec.grain.unit
    first, after = partition_range(start, end, spec.grain) if start is not None else (None, None)
    if spec.named_sources:
        raise click.UsageError(
            f"sweep compares production with one stream's events; {dataset} reads {spec.stream_names}"
        )
    stream = project_specs().streams[spec.primary_stream]
    console = wide_console()
    if start is not None and (note := widened(spec.grain, (start, end), (first, after))):
        console.print(note, markup=False, highlight=False)
    with console.status(f"sweeping {dataset}: starting Spark") as status, refusals():
        result = sweep(
            spark_session(), spec, stream, first, after, step=lambda m: status.update(f"{dataset}: {m}")
        )
    if not result.partitions:
        console.print(f"{dataset}: production holds no {noun}{'' if first is None else ' in that range'}")
        return
    console.print(sweep_table(result))
    if not result.divergent:
        console.print(
            f"no divergent {noun} in {len(result.partitions)} {noun}(s): production agrees with its events "
            "and the ledger"
        )
        return
    for partition in result.partitions:
        for problem in partition.problems:
            console.print(f"{partition.key} {problem}", markup=False, highlight=False, soft_wrap=True)
    console.print(f"{len(result.divergent)} divergent {noun}(s); proposed backfill (--end exclusive):")
    for command in result.commands():
        console.print(f"  {command}", markup=False, highlight=False, soft_wrap=True)
    raise SystemExit(1)
