"""Erasure at send time: a replay drops the records of subjects with an erasure request, as requests are now.

The events table a replay reads is pinned to one snapshot, but a request filed while a replay runs must
still stop that subject's records: before each batch the replay asks the requests table
(`platform.erasure_requests`, see `pipeline/erasure/requests.py`) for its current snapshot, and reloads the
hashes only when it changed. Both reads go through PyIceberg, like the events (a replay starts no Spark): a
changed snapshot costs one catalog look-up and a scan of a small table, an unchanged one the look-up only.

Each event's subject (the stream's `subject_field`, the events table's `subject_column`) is hashed with the
erasure key in Python (`hash_subject`, the same HMAC-SHA256 Spark's `subject_hash` computes) and looked up.
A skipped record is not sent but its position is passed: the checkpoint counts it as erased, so resume and
Kafka's one-transaction-per-batch stay as they were.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from backfill_platform.lakehouse.tables import PLATFORM_NAMESPACE
from backfill_platform.pipeline.erasure.requests import (
    ALL_STREAMS,
    KEY_CHECK_PROPERTY,
    KEY_ENV,
    KEY_FILE,
    NO_REQUESTS,
    REQUESTS_TABLE,
    Requests,
    erasure_key,
    hash_subject,
    key_check,
)
from backfill_platform.pipeline.replay.delivery import ReplayError
from backfill_platform.pipeline.replay.source import Event
from backfill_platform.specs.stream import StreamSpec


@dataclass(frozen=True)
class ErasureSummary:
    """What a replay run honored: the requests snapshots of its first and last batch, and the records it
    skipped as erased. `covered` is False for a stream without a `subject_field` (nothing is looked up)."""

    covered: bool
    erased: int = 0
    # The requests snapshot honored by this run's first batch and by its last (None: none filed yet).
    first_snapshot: int | None = None
    last_snapshot: int | None = None
    batches: int = 0  # batches this run checked

    def describe(self, stream: str) -> str:
        """One line for the CLI and the run's log."""
        if not self.covered:
            return (
                f"erasure: stream {stream!r} declares no subject_field, so it is not covered by erasure "
                "requests; every record was sent"
            )
        if not self.batches:
            return "erasure: no batch sent by this run, no request looked up"
        first, last = _snapshot(self.first_snapshot), _snapshot(self.last_snapshot)
        honored = (
            f"snapshot {first}" if first == last else f"snapshots {first} (first batch) to {last} (last)"
        )
        return f"erasure: {self.erased:,} records of requested subjects skipped, honoring requests {honored}"

    def metadata(self) -> dict[str, Any]:
        """The summary as output metadata (snapshot ids as text: Dagster's ints are 32-bit in its UI)."""
        return {
            "erasure_covered": self.covered,
            "erased": self.erased,
            "erasure_requests_first_snapshot": _snapshot(self.first_snapshot),
            "erasure_requests_last_snapshot": _snapshot(self.last_snapshot),
        }


def _snapshot(snapshot_id: int | None) -> str:
    return "none" if snapshot_id is None else str(snapshot_id)


class SendTimeErasure:
    """The requests of one stream as they are before each batch, and the filter they make.

    Holds the erasure key once loaded (never shown: no repr of it, no message with it)."""

    def __init__(self, catalog: Any, spec: StreamSpec) -> None:
        self.catalog, self.stream = catalog, spec.name
        self.covered = spec.subject_column is not None
        self.requests: Requests = NO_REQUESTS
        self._loaded = False
        self._key: bytes | None = None
        self.erased = 0
        self.batches = 0
        self.first_snapshot: int | None = None
        self.last_snapshot: int | None = None

    def __repr__(self) -> str:  # the default would show the key
        return f"SendTimeErasure(stream={self.stream!r}, snapshot={self.requests.snapshot_id})"

    def keep(self, batch: list[Event]) -> list[Event]:
        """The events of `batch` to send: those whose subject has no request as of now."""
        if not self.covered:
            return batch
        self.refresh()
        self.batches += 1
        if self.batches == 1:
            self.first_snapshot = self.requests.snapshot_id
        self.last_snapshot = self.requests.snapshot_id
        if not self.requests:
            return batch
        key, hashes = self._erasure_key(), self.requests.hashes
        kept = [e for e in batch if e.subject is None or hash_subject(e.subject, key) not in hashes]
        self.erased += len(batch) - len(kept)
        return kept

    def summary(self) -> ErasureSummary:
        return ErasureSummary(
            self.covered, self.erased, self.first_snapshot, self.last_snapshot, self.batches
        )

    def refresh(self) -> Requests:
        """The requests as of the table's current snapshot, re-read only when it moved since the last call."""
        from pyiceberg.exceptions import NoSuchTableError

        try:
            table = self.catalog.load_table((PLATFORM_NAMESPACE, REQUESTS_TABLE))
        except NoSuchTableError:  # no request was ever filed (and no key is needed)
            self.requests, self._loaded = NO_REQUESTS, True
            return self.requests
        current = table.current_snapshot()
        snapshot = current.snapshot_id if current is not None else None
        if self._loaded and snapshot == self.requests.snapshot_id:
            return self.requests
        self._check_key(table.properties.get(KEY_CHECK_PROPERTY, ""))
        self.requests, self._loaded = self._read(table, snapshot), True
        return self.requests

    def _read(self, table: Any, snapshot: int | None) -> Requests:
        from pyiceberg.expressions import In

        if snapshot is None:
            return NO_REQUESTS
        rows = (
            table.scan(
                row_filter=In("scope", (self.stream, ALL_STREAMS)),
                selected_fields=("subject_hash", "request_id"),
                snapshot_id=snapshot,
            )
            .to_arrow()
            .to_pylist()
        )
        ids: dict[str, list[str]] = {}
        for row in rows:
            ids.setdefault(row["subject_hash"], []).append(row["request_id"])
        return Requests(snapshot, frozenset(ids), {h: sorted(r) for h, r in ids.items()})

    def _check_key(self, recorded: str) -> None:
        """Refuse a key the requests were not filed with: it would recognise nobody and send everyone.

        A table without the check value (never the case for one `file_requests` made) is taken as is: the
        replay only reads, and the next Spark run that reads it records the value."""
        if recorded and recorded != key_check(self._erasure_key()):
            raise ReplayError(
                f"the erasure key ({KEY_ENV}, else {KEY_FILE} in the data folder) is not the key the "
                f"requests in {PLATFORM_NAMESPACE}.{REQUESTS_TABLE} were filed with (check value {recorded}, "
                f"this key's {key_check(self._erasure_key())}): with it no requested subject would be "
                "recognised, so nothing more is sent; set the key they were filed with"
            )

    def _erasure_key(self) -> bytes:
        if self._key is None:
            self._key = erasure_key()
        return self._key
