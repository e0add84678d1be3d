"""`backfill-platform replay`: republish validated events to a separate Kinesis stream."""

from __future__ import annotations

from pathlib import Path

import click

from backfill_platform.cli.app import day_range, main, quiet_dagster, refusals, wide_console


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

    from backfill_platform.lakehouse.resources import open_catalog
    from backfill_platform.pipeline.replay.kinesis import KinesisResource, ReplayError
    from backfill_platform.pipeline.replay.runner import ReplayRequest, check_target, run_replay
    from backfill_platform.specs.loader import load_specs

    quiet_dagster()
    first, after = day_range(start, end)
    streams = load_specs().streams
    if stream not in streams:
        raise click.BadParameter(
            f"unknown stream {stream!r}; known: {sorted(streams)}", param_hint="--stream"
        )
    request = ReplayRequest(streams[stream], first, after, target, max_records_per_second, checkpoint)
    # The target is judged before a client exists: a replay to the live stream is refused as such even
    # where no AWS region or credentials are configured (run_replay checks it again).
    check_target(streams[stream], target)
    console = wide_console()
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
        with refusals(), progress:
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
