"""One replay: check the target, pin the events snapshot, resume from the checkpoint, write, record.

The same for every sink (`delivery.ReplaySink`): the events of the range are read from one pinned snapshot
of the events table in (event_time, event_id) order, the sink says where a previous run stopped, and gets
the rest in batches, each delivered together with the position after it. Kinesis (`kinesis.py`) is at least
once: a replay killed between Kinesis's acknowledgement and the checkpoint sends that one batch again on
resume, never more, and consumers dedupe by event id. Kafka (`kafka.py`) is exactly once for
`read_committed` consumers: a batch and its position are one transaction.

Erasure requests are honored at send time (`erasure.py`): before each batch the requests are re-read when
their table changed, and the records of requested subjects are left out of the batch; its position still
passes them (counted as erased), so a request filed during a replay stops its subject from the next batch on.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any, Literal

from backfill_platform import settings
from backfill_platform.pipeline.replay import checkpoint as checkpoints
from backfill_platform.pipeline.replay.delivery import CircuitBreaker, ReplayError, ReplaySink
from backfill_platform.pipeline.replay.erasure import ErasureSummary, SendTimeErasure
from backfill_platform.pipeline.replay.kinesis import KinesisSink
from backfill_platform.pipeline.replay.source import Event, EventSource
from backfill_platform.specs.isolation import live_targets
from backfill_platform.specs.stream import StreamSpec

DEFAULT_MAX_RECORDS_PER_SECOND = 500
Sink = Literal["kinesis", "kafka"]


class ReplayRefused(ValueError):
    """The replay was refused before anything was sent (live or undeclared target, bad range)."""


@dataclass(frozen=True)
class ReplayRequest:
    spec: StreamSpec
    # Days (dates), or instants on the hour of an hourly stream; end exclusive: the day (hour) after the last.
    start: date | datetime
    end: date | datetime
    target: str
    max_records_per_second: int = DEFAULT_MAX_RECORDS_PER_SECOND
    checkpoint: Path | None = None
    max_records_per_call: int = 500
    breaker_window: int = 20
    max_failure_rate: float = 0.5
    sink: Sink = "kinesis"
    # Every target the platform knows is live (name -> whose), `specs.isolation.live_targets` of all the
    # code location's streams: refused whichever stream's spec lists it.
    live: Mapping[str, str] = dataclasses.field(default_factory=dict)

    @property
    def checkpoint_path(self) -> Path:
        if self.checkpoint is not None:
            return Path(self.checkpoint)
        name = f"{self.target}_{_label(self.start)}_{_label(self.end)}.json"
        return settings.data_dir() / "replay" / self.spec.name / name

    @property
    def identity(self) -> tuple[str, str, str, str]:
        return (self.spec.name, self.start.isoformat(), self.end.isoformat(), self.target)

    def breaker(self) -> CircuitBreaker:
        return CircuitBreaker(window=self.breaker_window, max_failure_rate=self.max_failure_rate)


@dataclass
class ReplayResult:
    request: ReplayRequest
    checkpoint: checkpoints.Checkpoint
    resumed_from: int  # position (events sent or erased) when this run started
    sent: int  # events delivered by this run
    seconds: float
    calls: int = 0
    retried_records: int = 0
    shards: int = 0  # Kinesis shards or Kafka partitions of the target
    already_done: bool = False
    checkpoint_location: str = ""
    end_offsets: dict[int, int] = dataclasses.field(default_factory=dict)  # Kafka: read_committed ends
    # Erasure at send time: records this run skipped, the requests snapshots it honored.
    erasure: ErasureSummary = dataclasses.field(default_factory=lambda: ErasureSummary(covered=False))

    @property
    def records_per_second(self) -> float:
        return self.sent / self.seconds if self.seconds else 0.0


def check_target(
    spec: StreamSpec, target: str, sink: Sink = "kinesis", live_elsewhere: Mapping[str, str] | None = None
) -> None:
    """Refuse the stream's live stream or topic, any target the platform knows is live (`live_elsewhere`:
    name -> whose, every stream's, see `specs.isolation.live_targets`) and any one not declared as a
    backfill target."""
    if sink == "kafka":
        live, allowed, kind = spec.live_kafka_topic, spec.backfill_kafka_topics, "Kafka topic"
        live_field, allowed_field = "live_kafka_topic", "backfill_kafka_topics"
    else:
        live, allowed, kind = spec.live_kinesis_stream, spec.backfill_kinesis_streams, "Kinesis stream"
        live_field, allowed_field = "live_kinesis_stream", "backfill_kinesis_streams"
    if live is not None and target == live:
        raise ReplayRefused(
            f"{target!r} is the live {kind} of {spec.name!r} ({live_field}): a replay never writes to the "
            f"live one; replay to one of its {allowed_field} ({', '.join(allowed) or 'none declared'})"
        )
    known_live = {**live_targets([spec], sink), **(live_elsewhere or {})}
    if target in known_live:
        raise ReplayRefused(
            f"{target!r} is {known_live[target]}: a replay never writes to a live one; replay to a backfill "
            f"target of {spec.name!r} ({', '.join(t for t in allowed if t not in known_live) or 'none'})"
        )
    if target not in allowed:
        what = "backfill topic" if sink == "kafka" else "backfill stream"
        raise ReplayRefused(
            f"{target!r} is not declared as a {what} of {spec.name!r}; declared: "
            f"{', '.join(allowed) or 'none'} (add it to the stream spec's {allowed_field})"
        )


def advanced(
    state: checkpoints.Checkpoint,
    batch: list[Event],
    sent: list[Event] | None = None,
    requests_snapshot: int | None = None,
) -> checkpoints.Checkpoint:
    """The position after `batch` (a new checkpoint: `state` stays what is recorded until it is), of which
    `sent` (default: all) are sent and the rest skipped as erased, honoring `requests_snapshot`."""
    sent = batch if sent is None else sent
    last = batch[-1]  # the last event passed, sent or not: a resumed run goes on after it
    return dataclasses.replace(
        state,
        delivered=state.delivered + len(sent),
        erased=state.erased + len(batch) - len(sent),
        requests_snapshot=requests_snapshot,
        batches=state.batches + 1,
        last_event_time=last.event_time.isoformat(),
        last_event_id=last.event_id,
    )


def replay(
    request: ReplayRequest,
    sink: ReplaySink,
    catalog: Any,
    on_start: Callable[[checkpoints.Checkpoint], None] = lambda _: None,
    on_batch: Callable[[checkpoints.Checkpoint, int], None] = lambda _c, _n: None,
) -> ReplayResult:
    """Replay [start, end) of the stream's events into `sink`, resuming from its recorded position."""
    spec = request.spec
    if request.end <= request.start:
        raise ReplayRefused(f"end {request.end} must be after start {request.start} (end is exclusive)")
    if request.max_records_per_second < 1:
        raise ReplayRefused("max_records_per_second must be at least 1")
    check_target(spec, request.target, request.sink, request.live)
    where = sink.checkpoint_location
    erasure = SendTimeErasure(catalog, spec)
    try:
        state = sink.load()
        if state is not None:
            state.check_belongs_to(*request.identity, path=where)
            if state.done:
                return ReplayResult(
                    request,
                    state,
                    state.position,
                    0,
                    0.0,
                    already_done=True,
                    checkpoint_location=where,
                    erasure=erasure.summary(),
                )
        source = EventSource(catalog, spec, request.start, request.end, state.snapshot_id if state else None)
        partitions = sink.open()  # the target exists and is writable
        if state is None:
            state = checkpoints.Checkpoint(
                *request.identity, snapshot_id=source.snapshot_id, total=source.count()
            )
            sink.save(state)
        resumed_from, delivered_before = state.position, state.delivered
        on_start(state)
        began = time.monotonic()
        try:
            for batch in sink.batches(source.events(after=state.last_key)):
                # The requests as they are now, not as when the replay started: a request filed during
                # the replay stops its subject from this batch on. The records left out are passed all
                # the same (their position is in `after`, in the same transaction for Kafka).
                sent = erasure.keep(batch)
                after = advanced(state, batch, sent, erasure.requests.snapshot_id)
                sink.deliver(sent, after)
                state = after
                on_batch(state, len(batch))
        except ReplayError as error:  # CircuitOpen stays a CircuitOpen, with the position added
            raise type(error)(
                f"{error}. Stopped after {state.position:,} of {state.total:,} events (checkpoint {where}); "
                "run the same replay again to resume"
            ) from error
        if state.position != state.total:
            raise ReplayError(
                f"passed {state.position:,} events ({state.delivered:,} delivered, {state.erased:,} erased) "
                f"but snapshot {state.snapshot_id} holds {state.total:,} "
                f"for the range (checkpoint {where}): the checkpoint does not match the table"
            )
        state = dataclasses.replace(state, done=True)
        sink.save(state)
        seconds = time.monotonic() - began
        return ReplayResult(
            request,
            state,
            resumed_from,
            state.delivered - delivered_before,
            seconds,
            calls=sink.stats.calls,
            retried_records=sink.stats.retried_records,
            shards=partitions,
            checkpoint_location=where,
            end_offsets=sink.end_offsets(),
            erasure=erasure.summary(),
        )
    finally:
        sink.close()


def run_replay(
    request: ReplayRequest,
    client: Any,
    catalog: Any,
    on_start: Callable[[checkpoints.Checkpoint], None] = lambda _: None,
    on_batch: Callable[[checkpoints.Checkpoint, int], None] = lambda _c, _n: None,
    sleep: Callable[[float], None] = time.sleep,
) -> ReplayResult:
    """Replay to Kinesis through `client` (boto3), its checkpoint in the request's file."""
    sink = KinesisSink(
        client,
        request.target,
        request.checkpoint_path,
        request.max_records_per_second,
        max_records_per_call=request.max_records_per_call,
        breaker=request.breaker(),
        sleep=sleep,
    )
    return replay(request, sink, catalog, on_start, on_batch)


def run_kafka_replay(
    request: ReplayRequest,
    kafka: Any,
    catalog: Any,
    on_start: Callable[[checkpoints.Checkpoint], None] = lambda _: None,
    on_batch: Callable[[checkpoints.Checkpoint, int], None] = lambda _c, _n: None,
    run_id: str | None = None,
    max_bytes_per_second: int | None = None,
) -> ReplayResult:
    """Replay to a Kafka topic through `kafka` (a `KafkaResource`), exactly once, its position in the
    progress topic; `run_id` names the run in the records' headers."""
    from backfill_platform.pipeline.replay.kafka import KafkaSink

    request = dataclasses.replace(request, sink="kafka")
    sink = KafkaSink(
        kafka,
        request.target,
        request.identity,
        request.spec.schema_versions[-1].version,
        request.max_records_per_second,
        max_bytes_per_second=max_bytes_per_second,
        breaker=request.breaker(),
        run_id=run_id,
    )
    return replay(request, sink, catalog, on_start, on_batch)


def _label(bound: date | datetime) -> str:
    """A range bound in a file name: `2026-10-01`, or `2026-10-01T1400` for an hour (no `:` or `+`)."""
    return bound.strftime("%Y-%m-%dT%H%M") if isinstance(bound, datetime) else bound.isoformat()
