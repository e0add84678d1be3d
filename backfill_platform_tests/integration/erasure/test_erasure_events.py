"""Erasure in the events pass: requested subjects' records are erased before dedupe and quarantine, counted
per partition (`read = written + duplicates + quarantined + erased`), and their text is stored nowhere.

The erased counts are compared with an independent count from the archive's own lines (Python's `json`,
the generator's attribution rule), not with the platform's figures. Requests are scoped to this test's own
stream copy, so no other test's runs honor them.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pyspark.sql import functions as F

from backfill_platform.lakehouse.snapshots import current_snapshot_id
from backfill_platform.lakehouse.tables import snapshot_summary
from backfill_platform.pipeline.erasure.requests import (
    HONORED_PROPERTY,
    file_requests,
    requests_for,
    requests_table,
)
from backfill_platform.pipeline.events.assets import build_events_asset
from backfill_platform.pipeline.events.ingest import ERASED_DETAIL
from backfill_platform.pipeline.ledger.ledger import latest_ingestions
from backfill_platform.pipeline.names import events_table, quarantine_table
from backfill_platform_tests.support.datasets import run
from backfill_platform_tests.support.session import DAYS, START
from backfill_platform_tests.support.streams import stream_copy

LAST = START + timedelta(days=DAYS - 1)


def _archive_lines(root: Path):
    for path in sorted(root.rglob("*.gz")):
        y, m, d, h = path.relative_to(root).parts[:4]
        hour = datetime(int(y), int(m), int(d), int(h), tzinfo=UTC)
        with gzip.open(path, "rt", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                yield hour, line


def _event_time(value) -> datetime | None:
    try:
        if isinstance(value, int):
            return datetime.fromtimestamp(value / 1000, UTC)
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except (AttributeError, TypeError, ValueError):
        return None


def _subjects_lines(root: Path, subjects: set[str]) -> tuple[Counter, list[str]]:
    """Per day, the archive's admissible lines of `subjects` (by event-time day: an id, a time within the
    stream's horizons), which are erased; and the texts of all their lines."""
    per_day: Counter = Counter()
    texts = []
    for hour, line in _archive_lines(root):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict) or record.get("user_id") not in subjects:
            continue
        texts.append(line.strip())
        t = _event_time(record.get("event_time"))
        admissible = (
            bool(record.get("event_id"))
            and t is not None
            and hour + timedelta(hours=1) - timedelta(hours=8) <= t < hour + timedelta(minutes=75)
        )
        if admissible:
            per_day[t.date().isoformat()] += 1
    return per_day, texts


def test_a_backfill_erases_requested_subjects_everywhere_and_accounts_for_them(
    truth, data_dir, spark, spark_resource, playback
):
    stream = stream_copy(playback, data_dir, "playback_erasure")
    root = data_dir / "archive" / stream.name
    users = Counter(
        json.loads(line).get("user_id")
        for _, line in _archive_lines(root)
        if line.startswith("{") and line.rstrip().endswith("}") and '"user_id"' in line
    )
    subjects = {user for user, _ in users.most_common(3)}
    filed, snapshot = file_requests(spark, sorted(subjects), stream.name, "test: three subjects")
    assert len(filed) == 3 and snapshot is not None
    # Filed again: the same subjects are not requested twice.
    again, _ = file_requests(spark, sorted(subjects), stream.name, "again")
    assert again == []
    # The table holds keyed hashes only, never the subjects.
    stored = spark.table(requests_table(spark)).where(F.col("scope") == stream.name).collect()
    assert len(stored) == 3 and not any(s in str(row.asDict()) for s in subjects for row in stored)
    assert requests_for(spark, stream.name).snapshot_id == snapshot

    result = run(spark_resource, [build_events_asset(stream)], START, LAST)
    assert result.success

    events = spark.table(events_table(spark, stream))
    assert events.where(F.col("user_id").isin(sorted(subjects))).count() == 0
    assert events.count() > 0
    quarantine = spark.table(quarantine_table(spark, stream))
    for subject in subjects:
        assert quarantine.where(F.col("line").contains(subject)).count() == 0
    # Their quarantined lines keep where and why, never their text.
    withheld = quarantine.where(F.col("detail") == ERASED_DETAIL).collect()
    assert all(r["line"] is None and r["raw_bytes"] is None and r["event_id"] is None for r in withheld)
    assert all(r["_source_file"] and r["_line_number"] and r["reason"] for r in withheld)

    expected, texts = _subjects_lines(root, subjects)
    assert len(texts) > 30 and sum(expected.values()) > 0
    assert len(withheld) == len(texts) - sum(expected.values())
    figures = latest_ingestions(spark, stream.name, [START + timedelta(days=i) for i in range(DAYS)])
    for day, row in figures.items():
        assert row["records"] == row["written"] + row["duplicates"] + row["quarantined"] + row["erased"], day
        assert row["erased"] == expected.get(day, 0), day
        assert row["erasure_snapshot_id"] == snapshot
        assert row["checks_passed"], (day, row["failed_checks"])
    # The reconciliation check shows the erased records; the events commit names the requests' snapshot.
    check = next(
        e
        for e in result.get_asset_check_evaluations()
        if e.check_name == "reconciliation" and e.partition == START.isoformat()
    )
    assert check.metadata["erased"].value == expected[START.isoformat()] and check.passed
    summary = snapshot_summary(
        spark, events_table(spark, stream), current_snapshot_id(spark, events_table(spark, stream))
    )
    assert summary[HONORED_PROPERTY] == str(snapshot)


def _plays_per_user(name: str, stream: str):
    from backfill_platform.specs.dataset import DatasetSpec

    return DatasetSpec.model_validate(
        {
            "name": name,
            "source_stream": stream,
            "partition_column": "event_date",
            "bucket_column": "event_hour",
            "key_columns": ["event_date", "event_hour", "user_id"],
            "columns": {"event_date": "date", "event_hour": "int", "user_id": "string", "plays": "long"},
            "versions": {"v1": {"transform": "backfill_platform_tests.transforms:plays_per_user"}},
            "active_version": "v1",
            "expected_rows": {"filter": "event_type = 'start'", "expression": "count(DISTINCT user_id)"},
            "reconciliation": [
                {"column": "plays", "filter": "event_type = 'start'", "expression": "count(1)"}
            ],
        }
    )


def test_the_erasure_check_blocks_a_shadow_built_on_events_that_still_hold_a_requested_subject(
    truth, data_dir, spark, spark_resource, playback
):
    from backfill_platform.pipeline.erasure.proof import ERASURE_HONORED
    from backfill_platform.pipeline.names import production_table, shadow_table
    from backfill_platform.pipeline.promotion.assets import build_production_asset
    from backfill_platform.pipeline.shadow.assets import build_shadow_asset

    stream = stream_copy(playback, data_dir, "playback_erasure_proof")
    spec = _plays_per_user("plays_per_user_erasure", stream.name)
    events = build_events_asset(stream)
    chain = [events, build_shadow_asset(spec, [stream], "v1"), build_production_asset(spec, [stream])]
    first = run(spark_resource, chain, START, START + timedelta(days=1))
    assert first.success
    verdicts = [e for e in first.get_asset_check_evaluations() if e.check_name == ERASURE_HONORED]
    # Both the shadow's and production's, for both days: nothing requested yet.
    assert len(verdicts) == 4 and all(v.passed for v in verdicts)
    assert verdicts[0].metadata["subject_column"].value == "user_id"

    production = spark.table(production_table(spark, spec))
    subject = (
        production.where(F.col("event_date") == START).orderBy(F.desc("plays"), "user_id").first()["user_id"]
    )
    filed, requests_snapshot = file_requests(spark, [subject], stream.name, "test", request_id="ticket-7")
    assert [f.request_id for f in filed] == ["ticket-7"]

    # The shadow alone, on the events derived before the request: blocked, naming the request.
    shadow_only = run(spark_resource, chain[1:2], START, START + timedelta(days=1))
    failed = {
        e.partition: e for e in shadow_only.get_asset_check_evaluations() if e.check_name == ERASURE_HONORED
    }
    assert set(failed) == {START.isoformat(), (START + timedelta(days=1)).isoformat()}
    assert not any(v.passed for v in failed.values())
    problem = failed[START.isoformat()].metadata["problem"].value
    assert "shadow rows of requested subjects (ticket-7)" in problem and "events read" in problem
    assert failed[START.isoformat()].metadata["table_rows_of_requested_subjects"].value > 0

    # Re-derived from the archive: the subject is gone everywhere, every check passes.
    again = run(spark_resource, chain, START, START + timedelta(days=1))
    assert again.success
    assert all(e.passed for e in again.get_asset_check_evaluations() if e.check_name == ERASURE_HONORED)
    for table in (
        events_table(spark, stream),
        shadow_table(spark, spec, "v1"),
        production_table(spark, spec),
    ):
        assert spark.table(table).where(F.col("user_id") == subject).count() == 0, table
    assert spark.table(production_table(spark, spec)).count() > 0
    # The shadow's and production's commits name the requests snapshot they honor.
    for table in (shadow_table(spark, spec, "v1"), production_table(spark, spec)):
        summary = snapshot_summary(spark, table, current_snapshot_id(spark, table))
        assert summary[HONORED_PROPERTY] == str(requests_snapshot), table
