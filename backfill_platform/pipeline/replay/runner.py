"""One replay: check the target, pin the events snapshot, resume from the checkpoint, write, record.

Delivery is at least once: a batch is checkpointed only once Kinesis acknowledged all of it, so a
replay killed between the acknowledgement and the checkpoint sends that one batch again on resume,
never more. Consumers dedupe by event id (the partition key and a field of every record).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from backfill_platform import settings
from backfill_platform.pipeline.replay import checkpoint as checkpoints
from backfill_platform.pipeline.replay.kinesis import (
    CircuitBreaker,
    KinesisWriter,
    ReplayError,
    stream_shards,
)
from backfill_platform.pipeline.replay.source import Event, EventSource
from backfill_platform.specs.stream import StreamSpec

DEFAULT_MAX_RECORDS_PER_SECOND = 500


class ReplayRefused(ValueError):
    """The replay was refused before anything was sent (live or undeclared target, bad range)."""


@dataclass(frozen=True)
class ReplayRequest:
    spec: StreamSpec
    start: date
    end: date  # exclusive: the day after the last one replayed
    target: str
    max_records_per_second: int = DEFAULT_MAX_RECORDS_PER_SECOND
    checkpoint: Path | None = None
    max_records_per_call: int = 500
    breaker_window: int = 20
    max_failure_rate: float = 0.5

    @property
    def checkpoint_path(self) -> Path:
        if self.checkpoint is not None:
            return Path(self.checkpoint)
        name = f"{self.target}_{self.start.isoformat()}_{self.end.isoformat()}.json"
        return settings.data_dir() / "replay" / self.spec.name / name


@dataclass
class ReplayResult:
    request: ReplayRequest
    checkpoint: checkpoints.Checkpoint
    resumed_from: int  # events already acknowledged when this run started
    sent: int  # events acknowledged by this run
    seconds: float
    calls: int = 0
    retried_records: int = 0
    shards: int = 0
    already_done: bool = False

    @property
    def records_per_second(self) -> float:
        return self.sent / self.seconds if self.seconds else 0.0


def check_target(spec: StreamSpec, target: str) -> None:
    """Refuse the stream's live Kinesis stream and any stream not declared as one of its backfill streams."""
    if spec.live_kinesis_stream is not None and target == spec.live_kinesis_stream:
        raise ReplayRefused(
            f"{target!r} is the live Kinesis stream of {spec.name!r} (live_kinesis_stream): a replay never "
            "writes to the live stream; replay to one of its backfill_kinesis_streams "
            f"({', '.join(spec.backfill_kinesis_streams) or 'none declared'})"
        )
    if target not in spec.backfill_kinesis_streams:
        raise ReplayRefused(
            f"{target!r} is not declared as a backfill stream of {spec.name!r}; declared: "
            f"{', '.join(spec.backfill_kinesis_streams) or 'none'} (add it to the stream spec's "
            "backfill_kinesis_streams)"
        )


def _batches(events: Iterator[Event], writer: KinesisWriter) -> Iterator[list[Event]]:
    batch: list[Event] = []
    size = 0
    for event in events:
        writer.check_record(event.event_id, event.data)
        entry = writer.entry_size(event.event_id, event.data)
        if batch and (len(batch) >= writer.batch_records or size + entry > writer.batch_bytes):
            yield batch
            batch, size = [], 0
        batch.append(event)
        size += entry
    if batch:
        yield batch


def run_replay(
    request: ReplayRequest,
    client: Any,
    catalog: Any,
    on_start: Callable[[checkpoints.Checkpoint], None] = lambda _: None,
    on_batch: Callable[[checkpoints.Checkpoint, int], None] = lambda _c, _n: None,
    sleep: Callable[[float], None] = time.sleep,
) -> ReplayResult:
    """Replay [start, end) of the stream's events to `target`, resuming from the checkpoint if any."""
    spec, path = request.spec, request.checkpoint_path
    if request.end <= request.start:
        raise ReplayRefused(f"end {request.end} must be after start {request.start} (end is exclusive)")
    if request.max_records_per_second < 1:
        raise ReplayRefused("max_records_per_second must be at least 1")
    check_target(spec, request.target)
    identity = (spec.name, request.start.isoformat(), request.end.isoformat(), request.target)
    state = checkpoints.load(path)
    if state is not None:
        state.check_belongs_to(*identity, path=path)
        if state.done:
            return ReplayResult(request, state, state.delivered, 0, 0.0, already_done=True)
    source = EventSource(catalog, spec, request.start, request.end, state.snapshot_id if state else None)
    shards = stream_shards(client, request.target)  # the target exists and is writable
    if state is None:
        state = checkpoints.Checkpoint(*identity, snapshot_id=source.snapshot_id, total=source.count())
        checkpoints.save(state, path)
    writer = KinesisWriter(
        client,
        request.target,
        shards,
        request.max_records_per_second,
        max_records_per_call=request.max_records_per_call,
        breaker=CircuitBreaker(window=request.breaker_window, max_failure_rate=request.max_failure_rate),
        sleep=sleep,
    )
    resumed_from = state.delivered
    on_start(state)
    began = time.monotonic()
    try:
        for batch in _batches(source.events(after=state.last_key), writer):
            writer.put([(event.event_id, event.data) for event in batch])
            last = batch[-1]
            state.delivered += len(batch)
            state.batches += 1
            state.last_event_time, state.last_event_id = last.event_time.isoformat(), last.event_id
            checkpoints.save(state, path)
            on_batch(state, len(batch))
    except ReplayError as error:  # CircuitOpen stays a CircuitOpen, with the position added
        raise type(error)(
            f"{error}. Stopped after {state.delivered:,} of {state.total:,} events (checkpoint {path}); "
            "run the same replay again to resume"
        ) from error
    if state.delivered != state.total:
        raise ReplayError(
            f"delivered {state.delivered:,} events but snapshot {state.snapshot_id} holds {state.total:,} "
            f"for the range (checkpoint {path}): the checkpoint does not match the table"
        )
    state.done = True
    checkpoints.save(state, path)
    return ReplayResult(
        request,
        state,
        resumed_from,
        state.delivered - resumed_from,
        time.monotonic() - began,
        calls=writer.stats.calls,
        retried_records=writer.stats.retried_records,
        shards=shards,
    )
