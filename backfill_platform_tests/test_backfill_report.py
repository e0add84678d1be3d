"""What `backfill` prints after its per-day table: the events step's throughput, from the ledger rows."""

from __future__ import annotations

from datetime import date

import pytest

from backfill_platform.ops.backfill import BackfillOutcome, BackfillRequest, throughput_line
from backfill_platform.specs.loader import load_specs

pytestmark = pytest.mark.unit

DAYS = [date(2026, 10, 1), date(2026, 10, 2)]


def outcome(ingestions: dict, run_ids: tuple[str, ...] = ()) -> BackfillOutcome:
    specs = load_specs()
    request = BackfillRequest(
        specs.datasets["views_per_title"], specs.streams["playback"], DAYS[0], date(2026, 10, 3)
    )
    return BackfillOutcome(request, "run-a", True, [], [], ingestions=ingestions, run_ids=run_ids)


def row(run_id: str, records: int, seconds: float) -> dict:
    return {"run_id": run_id, "records": records, "run_seconds": seconds}


def test_the_events_step_rate_is_its_records_over_its_run_time(data_dir):
    line = throughput_line(
        outcome({DAYS[0]: row("run-a", 30_000, 12.0), DAYS[1]: row("run-a", 20_000, 12.0)})
    )
    # Both days carry the one run's wall time: counted once.
    assert line == "events step (playback): 50,000 archive records in 12.0 s, 4,167 events/s"


def test_rows_of_other_runs_are_not_this_backfills(data_dir):
    assert throughput_line(outcome({DAYS[0]: row("older-run", 30_000, 12.0)})) is None
    line = throughput_line(
        outcome({DAYS[0]: row("older-run", 30_000, 12.0), DAYS[1]: row("run-a", 1_000, 2.0)})
    )
    assert line == "events step (playback): 1,000 archive records in 2.0 s, 500 events/s"


def test_a_submitted_backfill_adds_the_times_of_its_runs(data_dir):
    rows = {DAYS[0]: row("run-1", 6_000, 3.0), DAYS[1]: row("run-2", 3_000, 6.0)}
    line = throughput_line(outcome(rows, run_ids=("run-1", "run-2")))
    assert line == "events step (playback): 9,000 archive records in 9.0 s, 1,000 events/s"
