"""`backfill-platform replay`: republish validated events to a separate Kinesis stream or Kafka topic."""

from __future__ import annotations

from pathlib import Path

import click

from backfill_platform.cli.app import (
    main,
    partition_range,
    quiet_dagster,
    range_options,
    refusals,
    regular_file_or_new,
    wide_console,
)


@main.command("replay")
@click.option("--stream", required=True, help="Stream whose validated events are replayed.")
@range_options("First event day (UTC), or hour (2026-10-01T14:00) of an hourly stream.")
@click.option("--to-kinesis", "kinesis", help="Backfill Kinesis stream (declared in the stream spec).")
@click.option("--to-kafka", "kafka", help="Backfill Kafka topic (declared in the stream spec).")
@click.option(
    "--max-records-per-second",
    type=click.IntRange(min=1),
    default=None,
    help="Rate cap [500 for Kinesis, whose shard limits (1,000 records and 1 MiB/s each) apply too; "
    "20,000 for Kafka].",
)
@click.option(
    "--max-bytes-per-second",
    type=click.IntRange(min=1),
    default=None,
    help="Kafka: a cap on the bytes of keys and values per second [none].",
)
@click.option(
    "--checkpoint",
    type=click.Path(path_type=Path),
    callback=regular_file_or_new,
    default=None,
    help="Kinesis: checkpoint file [data/replay/<stream>/<target>_<start>_<end>.json]. (Kafka keeps the "
    "position in its progress topic, in each batch's transaction.)",
)
def replay_command(
    stream: str,
    start,
    end,
    kinesis: str | None,
    kafka: str | None,
    max_records_per_second: int | None,
    max_bytes_per_second: int | None,
    checkpoint,
) -> None:
    """Republish the validated events of [--start, --end) to a separate Kinesis stream or Kafka topic.

    Reads the stream's events table (deduplicated, upcast to the latest schema) through PyIceberg, in
    (event_time, event_id) order from one pinned snapshot, and sends each event as one JSON object with
    its event id as key. Refuses the stream's live stream or topic and any not declared in its spec
    (backfill_kinesis_streams, backfill_kafka_topics). Run the same command again to resume a stopped one.

    Erasure requests are honored at send time: before each batch the stream's requests are re-read (when
    they changed) and the records of requested subjects are skipped, not sent; the output counts them and
    names the requests snapshots honored. A stream without a subject_field is not covered (it says so).

    Kinesis (--to-kinesis): PutRecords batches within Kinesis's limits; the checkpoint file is rewritten
    after every acknowledged batch (at least once: a killed replay re-sends at most one batch, so
    consumers dedupe by event id). Kafka (--to-kafka, BACKFILL_PLATFORM_KAFKA_BOOTSTRAP): each batch is
    one transaction that also records the position (exactly once for read_committed consumers); headers
    name the backfill (backfill, backfill.stream, backfill.range, backfill.run, schema_version).

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

    from backfill_platform.components.registry import find_project, project_specs
    from backfill_platform.lakehouse.resources import open_catalog
    from backfill_platform.pipeline.kafka_cluster import KafkaResource
    from backfill_platform.pipeline.replay.delivery import ReplayError
    from backfill_platform.pipeline.replay.kinesis import KinesisResource
    from backfill_platform.pipeline.replay.runner import (
        ReplayRequest,
        check_target,
        run_kafka_replay,
        run_replay,
    )
    from backfill_platform.specs.isolation import live_targets

    if (kinesis is None) == (kafka is None):
        raise click.UsageError("give one target: --to-kinesis STREAM or --to-kafka TOPIC")
    sink = "kafka" if kafka else "kinesis"
    target = kafka or kinesis
    rate = max_records_per_second or (20_000 if kafka else 500)
    quiet_dagster()
    streams = project_specs().streams
    if stream not in streams:
        raise click.BadParameter(
            f"unknown stream {stream!r} in the project at {find_project().root}; known: {sorted(streams)}",
            param_hint="--stream",
        )
    first, after = partition_range(start, end, streams[stream].grain)
    live = live_targets(streams.values(), sink)
    request = ReplayRequest(streams[stream], first, after, target, rate, checkpoint, sink=sink, live=live)
    # The target is judged before a client exists: a replay to a live stream (any stream's) is refused as
    # such even where no AWS region or credentials are configured (run_replay checks it again).
    check_target(streams[stream], target, sink, live)
    kafka_resource = KafkaResource() if kafka else None
    where = (
        f"progress topic {kafka_resource.progress_topic}" if kafka_resource else str(request.checkpoint_path)
    )
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
        if state.position:
            erased = f", {state.erased:,} erased" if state.erased else ""
            console.print(f"resuming after {state.delivered:,} delivered events{erased} ({where})")
        progress.add_task("replay", total=state.total, completed=state.position, rate=0.0)

    def advanced(state, _batch: int) -> None:
        import time

        elapsed = time.monotonic() - began[0]
        rate = (state.delivered - began[1]) / elapsed if elapsed else 0.0
        progress.update(progress.task_ids[0], completed=state.position, rate=rate)

    try:
        with refusals(), progress:
            if kafka:
                result = run_kafka_replay(
                    request,
                    kafka_resource,
                    open_catalog(),
                    started,
                    advanced,
                    max_bytes_per_second=max_bytes_per_second,
                )
            else:
                result = run_replay(
                    request, KinesisResource().get_client(), open_catalog(), started, advanced
                )
    except ReplayError as error:
        raise click.ClickException(str(error)) from error
    state = result.checkpoint
    if result.already_done:
        again = "a replay to another topic or range" if kafka else "delete it to replay again"
        console.print(
            f"already complete: {state.delivered:,} events of {stream} [{state.start}, {state.end}) were "
            f"delivered to {target}{_erased(state.erased)} (checkpoint {result.checkpoint_location}; {again})"
        )
        return
    if kafka:
        ends = ", ".join(f"{p}: {o:,}" for p, o in sorted(result.end_offsets.items()))
        delivery = (
            f"{result.shards} partition(s), {result.calls} transactions, {result.retried_records} records "
            f"retried; end offsets for read_committed consumers {{{ends}}}"
        )
    else:
        delivery = (
            f"{result.shards} shard(s), {result.calls} PutRecords calls, {result.retried_records} records "
            "retried"
        )
    console.print(
        f"replayed {state.delivered:,} events of {stream} [{state.start}, {state.end}) (exclusive) to "
        f"{target}{_erased(state.erased)}: {result.sent:,} sent by this run in {result.seconds:.1f} s "
        f"({result.records_per_second:,.0f} records/s, {delivery}); checkpoint {result.checkpoint_location}"
    )
    console.print(result.erasure.describe(stream))


def _erased(count: int) -> str:
    """The records a replay skipped for erasure requests, over all its runs, when there were any."""
    return f" ({count:,} of requested subjects skipped as erased)" if count else ""
