"""Erasure at send time (pipeline/replay/erasure.py; issue 60): what a replay says and records of it."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pytest

from backfill_platform.components.registry import demo_spec_data
from backfill_platform.pipeline.erasure.requests import (
    KEY_CHECK_PROPERTY,
    KEY_ENV,
    REQUESTS_TABLE,
    hash_subject,
    key_check,
)
from backfill_platform.pipeline.replay.checkpoint import Checkpoint
from backfill_platform.pipeline.replay.delivery import ReplayError
from backfill_platform.pipeline.replay.erasure import ErasureSummary, SendTimeErasure
from backfill_platform.pipeline.replay.runner import advanced
from backfill_platform.pipeline.replay.source import Event
from backfill_platform.specs.stream import StreamSpec

MOMENT = datetime(2026, 10, 1, tzinfo=UTC)


def test_skipped_records_are_passed_by_the_position_and_counted_as_erased() -> None:
    state = Checkpoint("s", "2026-10-01", "2026-10-02", "t", snapshot_id=1, total=10, delivered=3, erased=1)
    batch = [Event(f"e{i}", MOMENT, b"{}", subject=f"u{i % 2}") for i in range(4)]
    after = advanced(state, batch, batch[:1], requests_snapshot=7)
    assert (after.delivered, after.erased, after.position) == (4, 4, 8)
    assert after.last_event_id == "e3" and after.requests_snapshot == 7  # past the skipped last one
    assert state.position == 4  # the recorded position stays until the new one is


def test_the_summary_says_what_was_honored_and_never_shows_the_key() -> None:
    summary = ErasureSummary(covered=True, erased=1234, first_snapshot=5, last_snapshot=9, batches=3)
    assert summary.describe("s") == (
        "erasure: 1,234 records of requested subjects skipped, honoring requests snapshots 5 (first batch) "
        "to 9 (last)"
    )
    assert summary.metadata()["erasure_requests_first_snapshot"] == "5"
    assert "not covered by erasure" in ErasureSummary(covered=False).describe("s")
    assert "snapshot none" in ErasureSummary(covered=True, batches=1).describe("s")


def _requests_table(tmp_path: Path, key: bytes):
    """A real (SQLite) PyIceberg catalog with the requests table, as `file_requests` makes it."""
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("unit", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/wh")
    catalog.create_namespace("platform")
    schema = pa.schema([("request_id", pa.string()), ("subject_hash", pa.string()), ("scope", pa.string())])
    table = catalog.create_table(
        ("platform", REQUESTS_TABLE), schema=schema, properties={KEY_CHECK_PROPERTY: key_check(key)}
    )
    return catalog, table, schema


def test_a_batch_keeps_the_subjects_without_a_request_as_of_now(tmp_path: Path, monkeypatch) -> None:
    key = "a test key, not the platform's"
    monkeypatch.setenv(KEY_ENV, key)
    catalog, table, schema = _requests_table(tmp_path, key.encode())
    spec = StreamSpec.model_validate(demo_spec_data("playback"))
    erasure = SendTimeErasure(catalog, spec)
    batch = [Event(f"e{i}", MOMENT, b"{}", subject=f"u{i % 3}") for i in range(6)] + [Event("n", MOMENT, b"")]
    assert erasure.keep(batch) == batch and erasure.requests.snapshot_id is None  # no commit yet

    rows = [
        ("r1", hash_subject("u1", key.encode()), spec.name),
        ("r2", hash_subject("u2", key.encode()), "other"),
    ]
    table.append(pa.Table.from_pylist([dict(zip(schema.names, r, strict=True)) for r in rows], schema))
    assert [e.event_id for e in erasure.keep(batch)] == [
        "e0",
        "e2",
        "e3",
        "e5",
        "n",
    ]  # u2's is another stream's
    loaded = erasure.requests
    assert erasure.refresh() is loaded  # the same snapshot: not read again
    summary = erasure.summary()
    assert (summary.erased, summary.first_snapshot, summary.last_snapshot) == (2, None, loaded.snapshot_id)
    assert key not in repr(erasure)

    monkeypatch.setenv(KEY_ENV, "another key")
    with pytest.raises(ReplayError, match="not the key the requests") as refused:
        SendTimeErasure(catalog, spec).keep(batch)
    assert key not in str(refused.value) and "another key" not in str(refused.value)
