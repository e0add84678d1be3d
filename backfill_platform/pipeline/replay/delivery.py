"""What every replay sink shares: its errors, pacing, the circuit breaker and the sink protocol.

A sink (Kinesis, Kafka) takes batches of events in the replay's order and records, durably, the position
after each: the runner (`runner.py`) reads the events, asks the sink where a previous run stopped, and hands
it batches. How "durably" is meant differs: Kinesis acknowledges records, then the checkpoint file is
replaced (at least once); Kafka commits the records and the position in one transaction (exactly once).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from backfill_platform.pipeline.replay.checkpoint import Checkpoint
from backfill_platform.pipeline.replay.source import Event


class ReplayError(RuntimeError):
    """The replay cannot go on (a refused target, a record too large, a batch never acknowledged)."""


class CircuitOpen(ReplayError):
    """Too many failed writes over the recent calls: the replay stops rather than hammer the target."""


class ReplaySink(Protocol):
    """One target of a replay: a Kinesis stream or a Kafka topic."""

    @property
    def target(self) -> str:
        """The stream's or topic's name."""
        ...

    @property
    def checkpoint_location(self) -> str:
        """Where the position is kept, for messages (a file, a topic and key)."""
        ...

    def load(self) -> Checkpoint | None:
        """The position a previous run of this replay recorded (None: none yet)."""
        ...

    def open(self) -> int:
        """Check the target exists and may be written; its shard or partition count."""
        ...

    def save(self, checkpoint: Checkpoint) -> None:
        """Record a position that sends nothing (the start of a replay, its end)."""
        ...

    def batches(self, events: Iterator[Event]) -> Iterator[list[Event]]:
        """The events in the sink's batches (its size limits; a record it can never take raises)."""
        ...

    def deliver(self, batch: list[Event], after: Checkpoint) -> None:
        """Write the batch and record `after` as the position; returns once both are durable."""
        ...

    @property
    def stats(self) -> DeliveryStats:
        """What this run's delivery took (calls or transactions, records, retries)."""
        ...

    def end_offsets(self) -> dict[int, int]:
        """Per partition, the end offset a consumer of the target sees now ({} where there is none)."""
        ...

    def close(self) -> None: ...


@dataclass
class DeliveryStats:
    calls: int = 0  # PutRecords calls, or Kafka transactions
    records: int = 0
    bytes: int = 0
    retried_records: int = 0
    failed_calls: int = 0
    throttled_records: int = 0


class Pacer:
    """At most `rate` units per second on average: each acquisition books the next slot of the clock.

    A call of n units starts no earlier than the end of the previous booking and books n / rate
    seconds, so over any interval the units sent exceed `rate` x interval by at most one call's worth.
    """

    def __init__(
        self,
        rate: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if rate <= 0:
            raise ValueError(f"rate must be positive, got {rate}")
        self.rate, self.clock, self.sleep = rate, clock, sleep
        self.next_free = clock()

    def acquire(self, units: float) -> None:
        now = self.clock()
        start = max(now, self.next_free)
        if start > now:
            self.sleep(start - now)
        self.next_free = start + units / self.rate


@dataclass
class CircuitBreaker:
    """Opens when, over the last `window` calls (at least `min_calls`), the share of records that
    failed (a call that raised counts all its records as failed) exceeds `max_failure_rate`."""

    window: int = 20
    min_calls: int = 5
    max_failure_rate: float = 0.5
    calls: deque = field(default_factory=deque)
    last_errors: deque = field(default_factory=lambda: deque(maxlen=3))

    def record(self, sent: int, failed: int, error: str | None = None) -> None:
        self.calls.append((sent, failed))
        while len(self.calls) > self.window:
            self.calls.popleft()
        if error and error not in self.last_errors:
            self.last_errors.append(error)

    @property
    def failure_rate(self) -> float:
        sent = sum(s for s, _ in self.calls)
        return sum(f for _, f in self.calls) / sent if sent else 0.0

    @property
    def open(self) -> bool:
        return len(self.calls) >= self.min_calls and self.failure_rate > self.max_failure_rate
