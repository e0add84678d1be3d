"""The replays as Dagster jobs: the same requests as `backfill-platform replay`, as typed run config."""

import time
from collections.abc import Callable

from dagster import Config, Failure, MetadataValue, OpExecutionContext, Output, ResourceParam, job, op
from pydantic import Field

from backfill_platform.pipeline.kafka_cluster import KafkaResource
from backfill_platform.pipeline.replay.delivery import ReplayError
from backfill_platform.pipeline.replay.kinesis import KinesisResource
from backfill_platform.pipeline.replay.runner import (
    DEFAULT_MAX_RECORDS_PER_SECOND,
    ReplayRequest,
    ReplayResult,
    run_kafka_replay,
    run_replay,
)
from backfill_platform.specs.isolation import live_targets
from backfill_platform.specs.spec_set import SpecSet

PROGRESS_LOG_SECONDS = 10.0
DEFAULT_KAFKA_RECORDS_PER_SECOND = 20_000


class ReplayRangeConfig(Config):
    stream: str = Field(description="Stream whose validated events are replayed, e.g. `playback`.")
    start: str = Field(
        description="First event-time day replayed (UTC), `YYYY-MM-DD`; or hour, `YYYY-MM-DD-HH:00`, of an hourly stream."
    )
    end: str = Field(
        description="Day (or hour) after the last one replayed (exclusive, as for backfills), a partition key."
    )
    max_failure_rate: float = Field(
        default=0.5,
        gt=0,
        le=1,
        description="Circuit breaker: stop when this share of records failed over the last calls.",
    )
    breaker_window: int = Field(default=20, ge=1, description="Circuit breaker: calls it looks back over.")

    def _request(
        self, streams: SpecSet, target: str, rate: int, sink: str, checkpoint: str | None = None
    ) -> ReplayRequest:
        from pathlib import Path

        streams = streams.streams
        if self.stream not in streams:
            raise ValueError(f"unknown stream {self.stream!r}; known: {sorted(streams)}")
        grain = streams[self.stream].grain
        try:
            start, end = grain.start(self.start), grain.start(self.end)
        except ValueError as error:
            raise ValueError(
                f"start and end must be partition keys of stream {self.stream}: {error}"
            ) from error
        if grain.unit == "day":
            start, end = start.date(), end.date()
        return ReplayRequest(
            spec=streams[self.stream],
            start=start,
            end=end,
            target=target,
            max_records_per_second=rate,
            checkpoint=Path(checkpoint) if checkpoint else None,
            breaker_window=self.breaker_window,
            max_failure_rate=self.max_failure_rate,
            sink=sink,  # type: ignore[arg-type]
            live=live_targets(streams.values(), sink),  # type: ignore[arg-type]
        )


class ReplayConfig(ReplayRangeConfig):
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

    def request(self, specs: SpecSet) -> ReplayRequest:
        """The replay of `stream`, looked up among the code location's specs."""
        return self._request(specs, self.to_kinesis, self.max_records_per_second, "kinesis", self.checkpoint)


class KafkaReplayConfig(ReplayRangeConfig):
    to_kafka: str = Field(
        description=(
            "Kafka topic written to: one of the stream spec's `backfill_kafka_topics`, never its "
            "`live_kafka_topic`. It must exist (a replay never creates its target)."
        )
    )
    max_records_per_second: int = Field(
        default=DEFAULT_KAFKA_RECORDS_PER_SECOND, ge=1, description="Rate cap (records/s)."
    )
    max_bytes_per_second: int | None = Field(
        default=None, ge=1, description="Cap on the bytes of keys and values per second (none by default)."
    )

    def request(self, specs: SpecSet) -> ReplayRequest:
        """The replay of `stream`, looked up among the code location's specs."""
        return self._request(specs, self.to_kafka, self.max_records_per_second, "kafka")


def _progress_logs(context: OpExecutionContext) -> tuple[Callable, Callable]:
    last_log = [time.monotonic()]

    def started(state) -> None:
        context.log.info(
            f"replaying {state.total:,} events of {state.stream} [{state.start}, {state.end}) to "
            f"{state.target} (snapshot {state.snapshot_id}), from position {state.position:,}"
        )

    def progressed(state, _batch: int) -> None:
        if time.monotonic() - last_log[0] >= PROGRESS_LOG_SECONDS:
            last_log[0] = time.monotonic()
            context.log.info(
                f"{state.position:,} / {state.total:,} events passed ({state.delivered:,} delivered, "
                f"{state.erased:,} erased)"
            )

    return started, progressed


def _output(context: OpExecutionContext, result: ReplayResult, **extra) -> Output:
    state = result.checkpoint
    # The erasure line too (an uncovered stream says so), since the metadata is easy to overlook.
    context.log.info(result.erasure.describe(state.stream))
    summary = {
        "delivered": state.delivered,
        "sent_this_run": result.sent,
        # Records of requested subjects this run left out, and the requests snapshots it honored.
        **result.erasure.metadata(),
        "resumed_from": result.resumed_from,
        "records_per_second": round(result.records_per_second, 1),
        "already_done": result.already_done,
    }
    return Output(
        summary,
        metadata={
            **summary,
            "total": state.total,
            "erased_in_total": state.erased,  # every run of this replay (resumed ones included)
            "snapshot_id": str(state.snapshot_id),
            "target": state.target,
            "calls": result.calls,
            "retried_records": result.retried_records,
            **extra,
        },
    )


@op(description="Republish validated events of [start, end) to a separate Kinesis backfill stream.")
def replay_to_kinesis_op(
    context: OpExecutionContext, config: ReplayConfig, kinesis: KinesisResource, specs: ResourceParam[SpecSet]
) -> Output:
    from backfill_platform.lakehouse.resources import open_catalog

    try:
        request = config.request(specs)
        result = run_replay(request, kinesis.get_client(), open_catalog(), *_progress_logs(context))
    except (ReplayError, ValueError) as error:
        raise Failure(str(error)) from error
    return _output(
        context, result, shards=result.shards, checkpoint=MetadataValue.path(str(request.checkpoint_path))
    )


@op(description="Republish validated events of [start, end) to a Kafka backfill topic, exactly once.")
def replay_to_kafka_op(
    context: OpExecutionContext,
    config: KafkaReplayConfig,
    kafka: KafkaResource,
    specs: ResourceParam[SpecSet],
) -> Output:
    from backfill_platform.lakehouse.resources import open_catalog

    try:
        result = run_kafka_replay(
            config.request(specs),
            kafka,
            open_catalog(),
            *_progress_logs(context),
            run_id=context.run_id,
            max_bytes_per_second=config.max_bytes_per_second,
        )
    except (ReplayError, ValueError) as error:
        raise Failure(str(error)) from error
    return _output(
        context,
        result,
        partitions=result.shards,
        end_offsets=MetadataValue.json({str(p): o for p, o in sorted(result.end_offsets.items())}),
        checkpoint=result.checkpoint_location,
    )


@job(
    description=(
        "Online replay: republish a stream's validated events of [start, end) to a separate Kinesis "
        "backfill stream, throttled, resumable from its checkpoint (the CLI's `replay --to-kinesis`)."
    ),
)
def replay_to_kinesis_job() -> None:
    replay_to_kinesis_op()


@job(
    description=(
        "Online replay: republish a stream's validated events of [start, end) to a Kafka backfill topic, "
        "each batch one transaction with its position: exactly once for read_committed consumers, "
        "resumable (the CLI's `replay --to-kafka`)."
    ),
)
def replay_to_kafka_job() -> None:
    replay_to_kafka_op()
