"""What `backfill` prints: the per-day table's verdicts, the events step's throughput (from the ledger rows)
and the lines naming what failed."""

from __future__ import annotations

from datetime import date

from rich.console import Console

from backfill_platform.components.registry import package_project, project_specs
from backfill_platform.operations.backfill import (
    BackfillOutcome,
    BackfillRequest,
    PartitionProblem,
    problem_lines,
    report_table,
    throughput_line,
)

DAYS = [date(2026, 10, 1), date(2026, 10, 2)]
KEYS = [day.isoformat() for day in DAYS]  # what the outcome is keyed by


def outcome(ingestions: dict, run_ids: tuple[str, ...] = (), **more) -> BackfillOutcome:
    specs = project_specs(package_project())
    request = BackfillRequest(
        specs.datasets["views_per_title"], specs.streams["playback"], DAYS[0], date(2026, 10, 3), dry_run=True
    )
    return BackfillOutcome(request, "run-a", True, [], [], ingestions=ingestions, run_ids=run_ids, **more)


def row(run_id: str, records: int, seconds: float) -> dict:
    return {"run_id": run_id, "records": records, "run_seconds": seconds}


def test_the_events_step_rate_is_its_records_over_its_run_time(data_dir):
    line = throughput_line(
        outcome({KEYS[0]: row("run-a", 30_000, 12.0), KEYS[1]: row("run-a", 20_000, 12.0)})
    )
    # Both days carry the one run's wall time: counted once.
    assert line == "events step (playback): 50,000 archive records in 12.0 s, 4,167 events/s"


def test_rows_of_other_runs_are_not_this_backfills(data_dir):
    assert throughput_line(outcome({KEYS[0]: row("older-run", 30_000, 12.0)})) is None
    line = throughput_line(
        outcome({KEYS[0]: row("older-run", 30_000, 12.0), KEYS[1]: row("run-a", 1_000, 2.0)})
    )
    assert line == "events step (playback): 1,000 archive records in 2.0 s, 500 events/s"


def test_a_submitted_backfill_adds_the_times_of_its_runs(data_dir):
    rows = {KEYS[0]: row("run-1", 6_000, 3.0), KEYS[1]: row("run-2", 3_000, 6.0)}
    line = throughput_line(outcome(rows, run_ids=("run-1", "run-2")))
    assert line == "events step (playback): 9,000 archive records in 9.0 s, 1,000 events/s"


def rendered(table) -> str:
    console = Console(width=200, record=True)
    console.print(table)
    return console.export_text()


def test_a_day_whose_events_failed_names_that_check_in_the_table(data_dir):
    events = {
        KEYS[0]: {
            **row("run-a", 10, 1.0),
            "checks_passed": True,
            "written": 10,
            "duplicates": 0,
            "quarantined": 0,
        },
        KEYS[1]: {
            **row("run-a", 5, 1.0),
            "checks_passed": False,
            "failed_checks": "settled",
            "written": 5,
            "duplicates": 0,
            "quarantined": 0,
        },
    }
    shadows = {KEYS[0]: {"checks_passed": True, "shadow_rows": 3}}
    text = rendered(report_table(outcome(events, validations=shadows)))
    lines = {line.split("│")[1].strip(): line for line in text.splitlines() if line.startswith("│")}
    assert "events: settled" in lines["2026-10-02"]
    assert "passed" in lines["2026-10-01"] and "events:" not in lines["2026-10-01"]


def test_a_step_stopped_by_blocking_checks_is_said_in_words(data_dir):
    failing = PartitionProblem(
        "2026-10-02", "raw/playback_events", "settled", "no archive file for ...", True
    )
    failure = (
        "raw__playback_events: dagster._core.errors.DagsterAssetCheckFailedError: "
        "1 blocking asset check failed"
    )
    done = outcome({})
    done.problems, done.step_failures = [failing], [failure, "shadow__x: ValueError: boom"]
    assert problem_lines(done) == [
        "2026-10-02 settled no archive file for ...",
        "step raw__playback_events stopped by the blocking checks above (2026-10-02): "
        "the steps after it did not run",
        "step shadow__x: ValueError: boom",  # any other failure keeps its own message
    ]
