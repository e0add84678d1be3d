"""The replay as a Dagster job: the same request as `backfill-platform replay`, as typed run config."""

import time
from datetime import date

from dagster import Config, Failure, MetadataValue, OpExecutionContext, Output, job, op
from pydantic import Field

from backfill_platform.pipeline.replay.kinesis import KinesisResource, ReplayError
from backfill_platform.pipeline.replay.runner import DEFAULT_MAX_RECORDS_PER_SECOND, ReplayRequest, run_replay

PROGRESS_LOG_SECONDS = 10.0


class ReplayConfig(Config):
    stream: str = Field(description="Stream whose validated events are replayed, e.g. `playback`.")
    start: str = Field(description="First event-time day replayed (UTC), `YYYY-MM-DD`.")
    end: str = Field(
        description="Day after the last one replayed (exclusive, as for backfills), `YYYY-MM-DD`."
    )
    to_kinesis: str = Field(
        description=(
            "Kinesis stream written to: one of the stream spec's `backfill_kinesis_streams`, never its "
            "`live_kinesis_stream`."
        )
    )
    max_records_per_second: int = Field(
        default=DEFAULT_MAX_RECORDS_PER_SECOND,
        ge=1,
        description="Rate cap (records/s); the target's shard limits (1,000 records and 1 MiB/s each) apply too.",
    )
    checkpoint: str | None = Field(
        default=None,
        description=(
            "Checkpoint file (JSON). Default: `<data>/replay/<stream>/<target>_<start>_<end>.json`; a "
            "replay with an unfinished checkpoint resumes after its last acknowledged batch."
        ),
    )
    max_failure_rate: float = Field(
        default=0.5,
        gt=0,
        le=1,
        description="Circuit breaker: stop when this share of records failed over the last calls.",
    )
    breaker_window: int = Field(default=20, ge=1, description="Circuit breaker: calls it looks back over.")

    def request(self) -> ReplayRequest:
        from pathlib import Path

        from backfill_platform.specs.loader import load_specs

        streams = load_specs().streams
        if self.stream not in streams:
            raise ValueError(f"unknown stream {self.stream!r}; known: {sorted(streams)}")
        try:
            start, end = date.fromisoformat(self.start), date.fromisoformat(self.end)
        except ValueError as error:
            raise ValueError(f"start and end must be YYYY-MM-DD dates: {error}") from error
        return ReplayRequest(
            spec=streams[self.stream],
            start=start,
            end=end,
            target=self.to_kinesis,
            max_records_per_second=self.max_records_per_second,
            checkpoint=Path(self.checkpoint) if self.checkpoint else None,
            breaker_window=self.breaker_window,
            max_failure_rate=self.max_failure_rate,
        )


@op(description="Republish validated events of [start, end) to a separate Kinesis backfill stream.")
def replay_to_kinesis_op(
    context: OpExecutionContext, config: ReplayConfig, kinesis: KinesisResource
) -> Output:
    from backfill_platform.lakehouse.resources import open_catalog

    try:
        request = config.request()
    except ValueError as error:
        raise Failure(str(error)) from error
    last_log = [time.monotonic()]

    def started(state) -> None:
        context.log.info(
            f"replaying {state.total:,} events of {state.stream} [{state.start}, {state.end}) to "
            f"{state.target} (snapshot {state.snapshot_id}), from position {state.delivered:,}"
        )

    def progressed(state, _batch: int) -> None:
        if time.monotonic() - last_log[0] >= PROGRESS_LOG_SECONDS:
            last_log[0] = time.monotonic()
            context.log.info(f"{state.delivered:,} / {state.total:,} events acknowledged")

    try:
        result = run_replay(request, kinesis.get_client(), open_catalog(), started, progressed)
    except (ReplayError, ValueError) as error:
        raise Failure(str(error)) from error
    state = result.checkpoint
    summary = {
        "delivered": state.delivered,
        "sent_this_run": result.sent,
        "resumed_from": result.resumed_from,
        "records_per_second": round(result.records_per_second, 1),
        "already_done": result.already_done,
    }
    return Output(
        summary,
        metadata={
            **summary,
            "total": state.total,
            "snapshot_id": str(state.snapshot_id),
            "target": state.target,
            "shards": result.shards,
            "calls": result.calls,
            "retried_records": result.retried_records,
            "checkpoint": MetadataValue.path(str(request.checkpoint_path)),
        },
    )


@job(
    description=(
        "Online replay: republish a stream's validated events of [start, end) to a separate Kinesis "
        "backfill stream, throttled, resumable from its checkpoint (the CLI's `replay`)."
    ),
    resource_defs={"kinesis": KinesisResource()},
)
def replay_to_kinesis_job() -> None:
    replay_to_kinesis_op()
