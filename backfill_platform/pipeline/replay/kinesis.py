"""Writing to Kinesis within its limits: batches, throttling, retries with backoff, a circuit breaker.

Limits (AWS): a `PutRecords` call takes at most 500 records and 5 MiB (data + partition keys); one
record at most 1 MiB; a shard accepts 1,000 records and 1 MiB per second. The writer asks the stream's
open shard count, and paces calls so that neither the shards' limits nor the configured rate is
passed. Records Kinesis refuses (`FailedRecordCount`, e.g. `ProvisionedThroughputExceededException`)
and failed calls are retried with exponential backoff and full jitter; a circuit breaker stops the
replay when the share of failed records over the last calls passes a bound.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from dagster import ConfigurableResource
from pydantic import Field

from backfill_platform.pipeline.replay import checkpoint as checkpoints
from backfill_platform.pipeline.replay.delivery import (
    CircuitBreaker,
    CircuitOpen,
    DeliveryStats,
    Pacer,
    ReplayError,
)
from backfill_platform.pipeline.replay.source import Event

MAX_RECORDS_PER_CALL = 500
MAX_BYTES_PER_CALL = 5 << 20
MAX_RECORD_BYTES = 1 << 20
SHARD_RECORDS_PER_SECOND = 1000
SHARD_BYTES_PER_SECOND = 1 << 20


class KinesisResource(ConfigurableResource):
    """A boto3 Kinesis client configured like dagster-aws's resources (the fields of its
    `ResourceWithBoto3Configuration`, without importing dagster-aws: seconds the CLI need not spend):
    region, profile, endpoint and credentials from the fields (secrets through
    `EnvVar`) or, when unset, from boto3's standard environment and config (`AWS_ENDPOINT_URL`,
    `AWS_DEFAULT_REGION`, `AWS_PROFILE`...)."""

    region_name: str | None = Field(default=None, description="AWS region [boto3's default].")
    profile_name: str | None = Field(default=None, description="AWS profile of the boto3 session.")
    endpoint_url: str | None = Field(
        default=None, description="Custom endpoint (an emulator) [boto3's default, or AWS_ENDPOINT_URL]."
    )
    use_ssl: bool = Field(default=True, description="Whether to use SSL.")
    verify: bool | None = Field(default=True, description="Whether to verify SSL certificates.")
    aws_access_key_id: str | None = Field(default=None, description="Access key id [boto3's chain].")
    aws_secret_access_key: str | None = Field(default=None, description="Secret key [boto3's chain].")
    aws_session_token: str | None = Field(default=None, description="Session token [boto3's chain].")
    max_attempts: int = Field(
        default=3,
        description="botocore's own attempts per call; the replay retries failed records on top of them.",
    )

    def get_client(self) -> Any:
        import boto3
        from botocore.config import Config as BotoConfig

        session = boto3.session.Session(profile_name=self.profile_name)
        return session.client(
            "kinesis",
            region_name=self.region_name,
            use_ssl=self.use_ssl,
            verify=self.verify,
            endpoint_url=self.endpoint_url,
            aws_access_key_id=self.aws_access_key_id,
            aws_secret_access_key=self.aws_secret_access_key,
            aws_session_token=self.aws_session_token,
            config=BotoConfig(retries={"max_attempts": self.max_attempts, "mode": "standard"}),
        )


def stream_shards(client: Any, stream: str) -> int:
    """Open shards of an existing, writable stream (a clear error otherwise)."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        summary = client.describe_stream_summary(StreamName=stream)["StreamDescriptionSummary"]
    except BotoCoreError as error:  # no credentials, no endpoint...
        raise ReplayError(f"cannot reach Kinesis stream {stream!r}: {error}") from error
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "")
        if code == "ResourceNotFoundException":
            raise ReplayError(f"Kinesis stream {stream!r} does not exist: create it first") from error
        raise ReplayError(f"cannot describe Kinesis stream {stream!r}: {error}") from error
    if summary["StreamStatus"] not in ("ACTIVE", "UPDATING"):
        raise ReplayError(f"Kinesis stream {stream!r} is {summary['StreamStatus']}, not ACTIVE")
    return max(1, int(summary.get("OpenShardCount") or 1))


class KinesisWriter:
    """Puts batches of (partition key, data) into one stream, paced, retried, behind a breaker."""

    def __init__(
        self,
        client: Any,
        stream: str,
        shards: int,
        max_records_per_second: int,
        max_records_per_call: int = MAX_RECORDS_PER_CALL,
        breaker: CircuitBreaker | None = None,
        max_attempts: int = 10,
        backoff_base: float = 0.1,
        backoff_cap: float = 5.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client, self.stream, self.shards = client, stream, shards
        self.records_per_second = min(max_records_per_second, SHARD_RECORDS_PER_SECOND * shards)
        self.bytes_per_second = SHARD_BYTES_PER_SECOND * shards
        # A batch never holds more than a second's worth, so pacing stays smooth at low rates.
        self.batch_records = max(1, min(max_records_per_call, MAX_RECORDS_PER_CALL, self.records_per_second))
        self.batch_bytes = min(MAX_BYTES_PER_CALL, self.bytes_per_second)
        self.records_pacer = Pacer(self.records_per_second, sleep=sleep)
        self.bytes_pacer = Pacer(self.bytes_per_second, sleep=sleep)
        self.breaker = breaker or CircuitBreaker()
        self.max_attempts, self.backoff_base, self.backoff_cap = max_attempts, backoff_base, backoff_cap
        self.sleep = sleep
        self.stats = DeliveryStats()

    @staticmethod
    def entry_size(key: str, data: bytes) -> int:
        return len(key.encode()) + len(data)

    def check_record(self, key: str, data: bytes) -> None:
        if not 1 <= len(key) <= 256:
            raise ReplayError(f"partition key {key[:64]!r} must have 1 to 256 characters")
        if self.entry_size(key, data) > MAX_RECORD_BYTES:
            raise ReplayError(
                f"event {key!r} serializes to {len(data):,} bytes: above Kinesis's 1 MiB record limit"
            )

    def backoff(self, attempt: int) -> float:
        """Full jitter: uniform in [0, min(cap, base x 2^(attempt-1))]."""
        return random.uniform(0, min(self.backoff_cap, self.backoff_base * 2 ** (attempt - 1)))

    def put(self, batch: Sequence[tuple[str, bytes]]) -> None:
        """Deliver every (partition key, data) of the batch, or raise. Returns once all are acknowledged."""
        from botocore.exceptions import BotoCoreError, ClientError

        pending = [{"PartitionKey": key, "Data": data} for key, data in batch]
        attempt = 0
        while pending:
            attempt += 1
            size = sum(self.entry_size(e["PartitionKey"], e["Data"]) for e in pending)
            self.records_pacer.acquire(len(pending))
            self.bytes_pacer.acquire(size)
            self.stats.calls += 1
            try:
                response = self.client.put_records(StreamName=self.stream, Records=pending)
            except (ClientError, BotoCoreError) as error:
                self.stats.failed_calls += 1
                self.breaker.record(len(pending), len(pending), f"PutRecords failed: {error}")
                self._after_failure(attempt, len(pending))
                continue
            results = response["Records"]
            failed = [entry for entry, result in zip(pending, results, strict=True) if "ErrorCode" in result]
            codes = sorted({r["ErrorCode"] for r in results if "ErrorCode" in r})
            self.stats.records += len(pending) - len(failed)
            self.stats.bytes += size - sum(self.entry_size(e["PartitionKey"], e["Data"]) for e in failed)
            self.stats.throttled_records += sum(
                1 for r in results if r.get("ErrorCode") == "ProvisionedThroughputExceededException"
            )
            error = (
                f"{len(failed)} of {len(pending)} records refused ({', '.join(codes)})" if failed else None
            )
            self.breaker.record(len(pending), len(failed), error)
            if failed:
                self.stats.retried_records += len(failed)
                self._after_failure(attempt, len(failed))
            pending = failed

    def _after_failure(self, attempt: int, pending: int) -> None:
        if self.breaker.open:
            raise CircuitOpen(
                f"circuit breaker open: {self.breaker.failure_rate:.0%} of the records of the last "
                f"{len(self.breaker.calls)} PutRecords calls to {self.stream!r} failed (bound "
                f"{self.breaker.max_failure_rate:.0%}); last errors: {'; '.join(self.breaker.last_errors)}"
            )
        if attempt >= self.max_attempts:
            raise ReplayError(
                f"{pending} records not acknowledged by {self.stream!r} after {attempt} attempts; last "
                f"errors: {'; '.join(self.breaker.last_errors)}"
            )
        self.sleep(self.backoff(attempt))


class KinesisSink:
    """A replay into a Kinesis stream, at least once: a batch is acknowledged by Kinesis, then the
    checkpoint file is replaced; a replay killed between the two sends that batch again on resume."""

    def __init__(
        self,
        client: Any,
        stream: str,
        checkpoint: Path,
        max_records_per_second: int,
        max_records_per_call: int = MAX_RECORDS_PER_CALL,
        breaker: CircuitBreaker | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client, self.stream, self.path = client, stream, Path(checkpoint)
        self.max_records_per_second, self.max_records_per_call = max_records_per_second, max_records_per_call
        self.breaker, self.sleep = breaker, sleep
        self.writer: KinesisWriter | None = None

    @property
    def target(self) -> str:
        return self.stream

    @property
    def checkpoint_location(self) -> str:
        return str(self.path)

    def load(self) -> checkpoints.Checkpoint | None:
        return checkpoints.load(self.path)

    def open(self) -> int:
        """The stream's open shards (it must exist and be active); the writer paces for them."""
        shards = stream_shards(self.client, self.stream)
        self.writer = KinesisWriter(
            self.client,
            self.stream,
            shards,
            self.max_records_per_second,
            max_records_per_call=self.max_records_per_call,
            breaker=self.breaker,
            sleep=self.sleep,
        )
        return shards

    def save(self, checkpoint: checkpoints.Checkpoint) -> None:
        checkpoints.save(checkpoint, self.path)

    def batches(self, events: Iterator[Event]) -> Iterator[list[Event]]:
        return batches_for(events, self._writer())

    def deliver(self, batch: list[Event], after: checkpoints.Checkpoint) -> None:
        self._writer().put([(event.event_id, event.data) for event in batch])
        checkpoints.save(after, self.path)

    @property
    def stats(self) -> DeliveryStats:
        return self.writer.stats if self.writer is not None else DeliveryStats()

    def end_offsets(self) -> dict[int, int]:
        return {}  # Kinesis sequence numbers are no counts: nothing to show

    def close(self) -> None:
        pass

    def _writer(self) -> KinesisWriter:
        if self.writer is None:
            raise RuntimeError("KinesisSink.open() first")
        return self.writer


def batches_for(events: Iterator[Event], writer: KinesisWriter) -> Iterator[list[Event]]:
    """The events in PutRecords batches within the writer's record and byte bounds."""
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
