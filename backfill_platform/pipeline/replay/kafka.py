"""Replay into a Kafka backfill topic, exactly once for `read_committed` consumers.

Each batch is one Kafka transaction of an idempotent, transactional producer: the batch's records and the
replay's position after them (a record in the progress topic, keyed by the replay's identity) are committed
together, or neither is. So the position a resumed replay reads is always that of the last committed batch:

- killed before a batch's transaction commits: its records and its position were never visible, and the
  next run's `init_transactions` (same `transactional.id`) aborts the leftover transaction first;
- killed after the commit: both are visible, and the next run goes on after that batch.

This is how Kafka Connect's exactly-once source connectors keep their offsets (KIP-618: the offsets topic
written in the records' transaction). A second replay of the same identity fences the first (its next commit
fails as fenced). Records: key = event id (Java's murmur2 partitioner, as Java producers place the same
key), value = the event as the latest schema's JSON object (what the Kinesis replay sends), headers naming
the backfill. The record timestamp is the time it is produced: a historic event time as the timestamp
would be deleted at once by a time-retained topic; the event time is in the value and a header.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from backfill_platform.faults import failpoint
from backfill_platform.pipeline.kafka_cluster import KafkaResource
from backfill_platform.pipeline.replay.checkpoint import Checkpoint
from backfill_platform.pipeline.replay.delivery import (
    CircuitBreaker,
    CircuitOpen,
    DeliveryStats,
    Pacer,
    ReplayError,
)
from backfill_platform.pipeline.replay.kafka_progress import (
    cluster_metadata,
    ensure_progress_topic,
    read_position,
    reader_config,
)
from backfill_platform.pipeline.replay.source import Event, iso_utc

# Failpoints of the fault tests: inside a batch's transaction, before and after its commit.
KAFKA_BEFORE_PRODUCE = "kafka-replay-before-produce"
KAFKA_BEFORE_COMMIT = "kafka-replay-before-commit"
KAFKA_AFTER_COMMIT = "kafka-replay-after-commit"
# Events per transaction at most: each commit costs ~30 ms, so a transaction carries thousands.
MAX_RECORDS_PER_TRANSACTION = 5000
# What the broker takes per record by default (`message.max.bytes`, about 1 MiB).
MAX_RECORD_BYTES = 1_000_000
# librdkafka errors that mean the broker cannot be reached: the breaker opens at once.
_BROKERS_DOWN = ("_ALL_BROKERS_DOWN",)


def _record_bytes(event: Event) -> int:
    """What a record weighs against the broker's record limit and the bytes-per-second cap: key + value."""
    return len(event.event_id.encode()) + len(event.data)


def transactional_id(identity: tuple[str, str, str, str]) -> str:
    """One id per replay (stream, range, topic): the same replay resumed fences and aborts its leftovers."""
    stream, start, end, topic = identity
    return f"backfill-platform.replay.{stream}.{topic}.{start}.{end}"


class KafkaSink:
    """A replay into one Kafka topic: batches as transactions, the position in the progress topic."""

    def __init__(
        self,
        kafka: KafkaResource,
        topic: str,
        identity: tuple[str, str, str, str],
        schema_version: int,
        max_records_per_second: int,
        max_bytes_per_second: int | None = None,
        breaker: CircuitBreaker | None = None,
        run_id: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
        max_attempts: int = 3,
    ) -> None:
        self.kafka, self.topic, self.identity = kafka, topic, identity
        self.key = "|".join(identity).encode()
        self.records_pacer = Pacer(max_records_per_second, sleep=sleep)
        self.bytes_pacer = Pacer(max_bytes_per_second, sleep=sleep) if max_bytes_per_second else None
        self.batch_records = max(1, min(MAX_RECORDS_PER_TRANSACTION, max_records_per_second))
        self.breaker = breaker or CircuitBreaker()
        self.sleep, self.max_attempts = sleep, max_attempts
        stream, start, end, _ = identity
        self.headers = [
            ("backfill", b"true"),
            ("backfill.stream", stream.encode()),
            ("backfill.range", f"{start}/{end}".encode()),
            ("backfill.run", (run_id or uuid.uuid4().hex).encode()),
            ("schema_version", str(schema_version).encode()),
        ]
        self._stats = DeliveryStats()
        self.partitions = 0  # known once `open` has asked the broker
        self.producer: Any = None
        self.brokers_down: str | None = None

    # --- the sink protocol ------------------------------------------------------------------------------

    @property
    def target(self) -> str:
        return self.topic

    @property
    def checkpoint_location(self) -> str:
        return f"topic {self.kafka.progress_topic!r}, key {self.key.decode()!r}"

    @property
    def stats(self) -> DeliveryStats:
        return self._stats

    def load(self) -> Checkpoint | None:
        """Take over the replay's transactional id (aborting what a killed run left open), then read its
        last committed position."""
        from confluent_kafka import KafkaException

        ensure_progress_topic(self.kafka)
        self.producer = self._producer()
        try:
            self.producer.init_transactions(self._seconds(self.kafka.transaction_timeout_ms))
        except KafkaException as error:
            raise ReplayError(f"cannot start a transaction at {self._where()}: {error.args[0]}") from None
        return read_position(self.kafka, self.key)

    def open(self) -> int:
        metadata = cluster_metadata(self.kafka, self.topic)
        topic = metadata.topics.get(self.topic)
        if topic is None or topic.error is not None:
            raise ReplayError(
                f"Kafka topic {self.topic!r} does not exist at {self.kafka.bootstrap()}: create it first "
                "(a replay never creates its target)"
            )
        self.partitions = len(topic.partitions)
        return self.partitions

    def save(self, checkpoint: Checkpoint) -> None:
        self._transaction([], checkpoint)

    def batches(self, events: Iterator[Event]) -> Iterator[list[Event]]:
        batch: list[Event] = []
        for event in events:
            size = _record_bytes(event)
            if size > MAX_RECORD_BYTES:
                raise ReplayError(
                    f"event {event.event_id!r} serializes to {len(event.data):,} bytes: above Kafka's default "
                    f"{MAX_RECORD_BYTES:,}-byte record limit (message.max.bytes)"
                )
            batch.append(event)
            if len(batch) >= self.batch_records:
                yield batch
                batch = []
        if batch:
            yield batch

    def deliver(self, batch: list[Event], after: Checkpoint) -> None:
        size = sum(_record_bytes(e) for e in batch)
        self.records_pacer.acquire(len(batch))
        if self.bytes_pacer is not None:
            self.bytes_pacer.acquire(size)
        self._transaction(batch, after)
        self._stats.records += len(batch)
        self._stats.bytes += size

    def end_offsets(self) -> dict[int, int]:
        """Per partition of the topic, the end offset `read_committed` consumers see (the last stable
        offset; commit markers take offsets too, so it is no count of records)."""
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer(reader_config(self.kafka))
        try:
            return {
                partition: consumer.get_watermark_offsets(TopicPartition(self.topic, partition), timeout=10)[
                    1
                ]
                for partition in range(self.partitions)
            }
        finally:
            consumer.close()

    def close(self) -> None:
        if self.producer is not None:
            self.producer.flush(5)
            self.producer = None

    # --- transactions -------------------------------------------------------------------------------------

    def _transaction(self, batch: list[Event], after: Checkpoint) -> None:
        """The batch's records and the position `after` in one transaction, retried as a whole."""
        from confluent_kafka import KafkaException

        attempt = 0
        while True:
            attempt += 1
            self._stats.calls += 1
            try:
                self.producer.begin_transaction()
                failpoint(KAFKA_BEFORE_PRODUCE)
                for event in batch:
                    self._produce(
                        self.topic,
                        event.event_id.encode(),
                        event.data,
                        [*self.headers, ("event_time", iso_utc(event.event_time).encode())],
                    )
                position = {**asdict(after), "updated_at": datetime.now(UTC).isoformat(timespec="seconds")}
                self._produce(self.kafka.progress_topic, self.key, json.dumps(position).encode(), None)
                # Sent before the commit (which would flush them too): a crash now leaves them on the
                # broker in an open transaction, invisible to read_committed consumers.
                self.producer.flush(self._seconds(self.kafka.message_timeout_ms))
                failpoint(KAFKA_BEFORE_COMMIT)
                self.producer.commit_transaction(self._seconds(self.kafka.message_timeout_ms) + 5)
                failpoint(KAFKA_AFTER_COMMIT)
                self.breaker.record(len(batch) or 1, 0)
                return
            except KafkaException as raised:
                error = raised.args[0]
                self._stats.failed_calls += 1
                self._stats.retried_records += len(batch)
                self.breaker.record(len(batch) or 1, len(batch) or 1, f"{error.name()}: {error.str()}")
                self._abort_after(error)
                if error.fatal():
                    raise ReplayError(
                        f"the producer of {self._where()} can no longer write ({error.name()}: {error.str()}); "
                        "another replay of the same range and topic may have taken over"
                    ) from None
                if self.brokers_down or self.breaker.open:
                    raise CircuitOpen(
                        f"circuit breaker open on {self._where()}: "
                        f"{self.brokers_down or f'{self.breaker.failure_rate:.0%} of the last records failed'}; "
                        f"last errors: {'; '.join(self.breaker.last_errors)}"
                    ) from None
                if attempt >= self.max_attempts:
                    raise ReplayError(
                        f"a batch of {len(batch):,} events was not committed to {self._where()} after "
                        f"{attempt} attempts; last errors: {'; '.join(self.breaker.last_errors)}"
                    ) from None
                self.sleep(min(5.0, 0.2 * 2**attempt))

    def _produce(self, topic: str, key: bytes, value: bytes, headers: list | None) -> None:
        while True:
            try:
                self.producer.produce(topic, value=value, key=key, headers=headers)
                return
            except BufferError:  # the local queue is full: let librdkafka send, then go on
                self.producer.poll(0.1)

    def _abort_after(self, error: Any) -> None:
        """Abort the failed transaction when librdkafka asks for it; an abort that times out (the broker
        gone) leaves it to the broker's transaction timeout or to the next run's `init_transactions`."""
        from confluent_kafka import KafkaException

        if error.fatal() or not error.txn_requires_abort():
            return
        # A failed abort is reported through the breaker's last errors; the transaction never commits now.
        with contextlib.suppress(KafkaException):
            self.producer.abort_transaction(self._seconds(self.kafka.message_timeout_ms))

    # --- the connection -----------------------------------------------------------------------------------

    def _where(self) -> str:
        return f"Kafka topic {self.topic!r} at {self.kafka.bootstrap()}"

    @staticmethod
    def _seconds(milliseconds: int) -> float:
        return milliseconds / 1000

    def _on_error(self, error: Any) -> None:
        """librdkafka's error callback: every broker unreachable opens the breaker at the next failure."""
        if error.name() in _BROKERS_DOWN:
            self.brokers_down = f"no broker of {self.kafka.bootstrap()} answers ({error.str()})"

    def _producer(self) -> Any:
        from confluent_kafka import Producer

        return Producer(
            {
                **self.kafka.client_config(),
                "transactional.id": transactional_id(self.identity),
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "compression.type": "lz4",
                # Java's partitioner: the same key lands in the same partition as from a Java producer.
                "partitioner": "murmur2_random",
                "transaction.timeout.ms": self.kafka.transaction_timeout_ms,
                "message.timeout.ms": min(self.kafka.message_timeout_ms, self.kafka.transaction_timeout_ms),
                "error_cb": self._on_error,
                "log_level": 3,
            }
        )
