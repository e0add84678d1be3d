"""`backfill-platform plan | backfill | status`, in process through click's CliRunner.

Each command's output is checked against what is read back independently: the archive's files (listed
and decompressed here, not by the platform), the ledger and production (Spark), the Dagster run (its
own instance). The backfills run in this process, on the session's Spark, through the code location's
asset job; they write only the copies of the session archive declared here (`playback_cli*`), so the
demo dataset other tests promote into is left alone.
"""

from __future__ import annotations

import gzip
import re
import time
from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path

import pytest
from click.testing import Result
from dagster import DagsterInstance
from pyspark.sql import functions as F

from backfill_platform.lakehouse.snapshots import current_snapshot_id
from backfill_platform.lakehouse.tables import table_exists
from backfill_platform.orchestration.dagster_home import write_dagster_home
from backfill_platform.pipeline.step_progress import PROGRESS_SECONDS_ENV
from backfill_platform.specs.durations import HOUR, midnight
from backfill_platform_tests.support.cli import invoke, table_row
from backfill_platform_tests.support.dagster_dev import GAP_HOUR
from backfill_platform_tests.support.datasets import LEDGER, production
from backfill_platform_tests.support.projects import write_project
from backfill_platform_tests.support.session import DAYS, START
from backfill_platform_tests.support.streams import stream_copy_specs

STREAM, DATASET = "playback_cli", "views_cli"
GAP_STREAM, GAP_DATASET = "playback_cli_gap", "views_cli_gap"
STRICT_STREAM, STRICT_DATASET = "playback_cli_strict", "views_cli_strict"
STRICT_RATIO = 0.0001  # far below the generated archive's malformed lines: every day fails it
PROMOTED_DAYS = ["2026-10-02", "2026-10-03"]
DRY_RUN_DAY = "2026-10-04"
FAILING_DAY = "2026-10-02"
PRODUCTION = production(DATASET).table


@pytest.fixture(scope="module")
def cli_env(truth, data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A project of copies of the session archive (one whole, one without GAP_HOUR, one with a strict
    quarantine bound) beside the demo's streams and datasets, and a Dagster instance of its own, for every
    command of this module."""
    strict = stream_copy_specs(data_dir, STRICT_STREAM, STRICT_DATASET, drop_hours=[])
    strict[0]["max_quarantine_ratio"] = STRICT_RATIO
    specs = [
        *stream_copy_specs(data_dir, STREAM, DATASET, drop_hours=[]),
        *stream_copy_specs(data_dir, GAP_STREAM, GAP_DATASET, drop_hours=[GAP_HOUR]),
        *strict,
    ]
    project = write_project(tmp_path_factory.mktemp("cli_project"), specs, demo=True)
    home = tmp_path_factory.mktemp("cli_dagster_home")
    write_dagster_home(home)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(project.root)  # the CLI's project, as `dg`'s: the one of its working directory
        patch.setenv("DAGSTER_HOME", str(home))
        patch.setenv(PROGRESS_SECONDS_ENV, "1")  # a step's signs of life, every second
        yield home


# --- plan ---------------------------------------------------------------------------------------------


def archive_day(root: Path, day: date) -> tuple[int, int, int]:
    """(files, bytes, lines) of the ingestion hours [day - 15 min - 1 h, day end + 8 h + 1 h), read here."""
    low = midnight(day) - timedelta(minutes=75)
    hour, high = low.replace(minute=0), low + timedelta(days=1, hours=10, minutes=15)
    files = size = lines = 0
    while hour < high:
        folder = root / hour.strftime("%Y/%m/%d/%H")
        for path in sorted(folder.glob("*")) if folder.is_dir() else []:
            text = gzip.decompress(path.read_bytes())
            files, size = files + 1, size + path.stat().st_size
            lines += text.count(b"\n") + (not text.endswith(b"\n") and bool(text))
        hour += HOUR
    return files, size, lines


def test_plan_per_day_files_bytes_and_lines_equal_the_archive(cli_env, data_dir: Path, truth):
    started = time.monotonic()
    result = invoke("plan", "--stream", "playback", "--start", START.isoformat(),
                    "--end", (START + timedelta(days=DAYS)).isoformat())  # fmt: skip
    assert result.exit_code == 0
    for i in range(DAYS):
        day = START + timedelta(days=i)
        files, size, lines = archive_day(data_dir / "archive" / "playback", day)
        row = table_row(result.output, day.isoformat())
        assert row[2:5] == [f"{files:,}", f"{size:,}", f"{lines:,}"], day
        assert row[5] == "none", day
    # Windows overlap; over the whole range every file of the archive is read exactly once.
    totals = truth["totals"]
    assert f"read {totals['files']:,} distinct archive files, {totals['bytes']:,} bytes, " in result.output
    assert f"{totals['lines']:,} lines" in result.output
    assert time.monotonic() - started < 60


def test_the_plan_of_a_join_covers_every_source(cli_env, data_dir: Path, truth):
    day = START + timedelta(days=1)
    result = invoke("plan", "--dataset", "attributed_plays", "--start", day.isoformat(),
                    "--end", (day + timedelta(days=1)).isoformat())  # fmt: skip
    assert result.exit_code == 0, result.output
    plans = result.output.split("plan for ")[1:]
    assert [text.split(":", 1)[0] for text in plans] == ["playback", "impressions"]
    for stream, text in zip(("playback", "impressions"), plans, strict=True):
        files, size, lines = archive_day(data_dir / "archive" / stream, day)
        assert table_row(text, day.isoformat())[2:5] == [f"{files:,}", f"{size:,}", f"{lines:,}"], stream
    # The impressions' lookback reads the day before the range: planned too, with its own figures.
    before = day - timedelta(days=1)
    files, size, lines = archive_day(data_dir / "archive" / "impressions", before)
    row = table_row(plans[1], f"{before} (lookback)")
    assert row[2:5] == [f"{files:,}", f"{size:,}", f"{lines:,}"]
    assert f"impressions {before} is read by the lookback of the range's first day: " in plans[1]
    assert f"{before} (lookback)" not in plans[0]


def test_plan_names_the_missing_ingestion_hour(cli_env):
    result = invoke("plan", "--dataset", GAP_DATASET, "--start", "2026-10-02", "--end", "2026-10-05")
    assert result.exit_code == 0
    hole = "2026-10-03 05:00 to 05:59"
    # 2026-10-02 reads it through its lateness, 2026-10-03 directly; 2026-10-04 starts at 22:45 the day before.
    assert table_row(result.output, "2026-10-02")[5] == hole
    assert table_row(result.output, "2026-10-03")[5] == hole
    assert table_row(result.output, "2026-10-04")[5] == "none"
    assert "2 day(s) have missing ingestion hours" in result.output


# --- backfill -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def backfill_result(cli_env, spark) -> Result:
    """Two days of the copy, promoted. (The run's Spark resource finds the session's Spark running.)"""
    return invoke("backfill", "--dataset", DATASET, "--start", PROMOTED_DAYS[0], "--end", "2026-10-04",
                  "--reason", "cli test", "--ticket", "CLI-7")  # fmt: skip


@pytest.fixture(scope="module")
def dry_run(backfill_result, spark) -> tuple[Result, int | None]:
    """A dry run of the day after the promoted ones, and production's snapshot before it."""
    before = current_snapshot_id(spark, PRODUCTION)
    return invoke("backfill", "--dataset", DATASET, "--start", DRY_RUN_DAY, "--end", "2026-10-05",
                  "--dry-run"), before  # fmt: skip


@pytest.fixture(scope="module")
def failing_backfill(cli_env, spark) -> Result:
    """One day of the strict copy: its quarantine ratio check fails."""
    return invoke("backfill", "--dataset", STRICT_DATASET, "--start", FAILING_DAY, "--end", "2026-10-03")


def ledger_rows(spark, dataset: str) -> list:
    return spark.table(LEDGER).where(F.col("dataset") == dataset).collect()


def test_backfill_promotes_and_the_report_matches_ledger_and_production(backfill_result, spark, truth):
    assert backfill_result.exit_code == 0
    snapshot = current_snapshot_id(spark, PRODUCTION)
    rows = {
        r["partition_date"].isoformat(): r
        for r in ledger_rows(spark, DATASET)
        if r["version"] == "v2" and r["promoted_snapshot_id"] is not None
    }
    assert sorted(rows) == PROMOTED_DAYS
    counts = {
        r["event_date"].isoformat(): r["count"]
        for r in spark.table(PRODUCTION).groupBy("event_date").count().collect()
    }
    assert sorted(counts) == PROMOTED_DAYS
    for day in PROMOTED_DAYS:
        row, cells = rows[day], table_row(backfill_result.output, day)
        assert row["promoted_snapshot_id"] == snapshot and row["checks_passed"]
        assert row["shadow_rows"] == counts[day]
        assert row["records"] == truth["partitions"][day]["records"]
        assert cells[1] == f"{row['records']:,}" and cells[5] == f"{counts[day]:,}"
        assert cells[6:] == ["passed", f"v2 @ {snapshot}", "promoted"]
    # The events step's throughput, over the records of the range's days the ledger holds.
    records = sum(truth["partitions"][day]["records"] for day in PROMOTED_DAYS)
    throughput = next(line for line in backfill_result.output.splitlines() if line.startswith("events step"))
    assert f"): {records:,} archive records in " in throughput, throughput
    assert throughput.endswith(" events/s"), throughput

    # Inside each step, signs of life (the output is a pipe here: timestamped lines): Spark's stages with
    # their tasks, under the step that runs them.
    progress = [line for line in backfill_result.output.splitlines() if " s: stage " in line]
    assert any(f"raw__{STREAM}_events " in line for line in progress), backfill_result.output
    assert all(re.search(r"\d+/\d+ tasks", line) for line in progress)

    run = DagsterInstance.get().get_run_by_id(rows[PROMOTED_DAYS[0]]["promotion_run_id"])
    assert run.tags["backfill_platform/reason"] == "cli test"
    assert run.tags["backfill_platform/ticket"] == "CLI-7"
    assert run.tags["backfill_platform/promotion_policy"] == "all_or_nothing"


def test_dry_run_validates_and_leaves_production_untouched(dry_run, spark):
    result, before = dry_run
    assert result.exit_code == 0
    assert current_snapshot_id(spark, PRODUCTION) == before
    assert spark.table(PRODUCTION).where(F.col("event_date") == DRY_RUN_DAY).count() == 0
    validated = [r for r in ledger_rows(spark, DATASET) if r["partition_date"].isoformat() == DRY_RUN_DAY]
    assert [(r["checks_passed"], r["promoted_snapshot_id"]) for r in validated] == [(True, None)]
    assert table_row(result.output, DRY_RUN_DAY)[-1] == "dry run"
    assert "dry run: production untouched" in result.output


def test_failing_day_prints_the_day_the_check_and_its_numbers(failing_backfill, spark, truth):
    assert failing_backfill.exit_code == 1
    quarantined = {reason: n for reason, n in truth["partitions"][FAILING_DAY]["quarantined"].items() if n}
    ratio = f"{sum(quarantined.values()) / truth['partitions'][FAILING_DAY]['records'] * 100:.3g}%"
    line = next(
        line
        for line in failing_backfill.output.splitlines()
        if line.startswith(f"{FAILING_DAY} quarantine_ratio ")
    )
    assert line.startswith(f"{FAILING_DAY} quarantine_ratio {ratio} > 0.01%: ")
    for reason, n in quarantined.items():
        assert f"{n:,} {'line' if n == 1 else 'lines'} {reason}" in line
    assert table_row(failing_backfill.output, FAILING_DAY)[-1] == "held back"
    strict_production = production("views_cli_strict").table
    assert not table_exists(spark, strict_production) or spark.table(strict_production).count() == 0


# --- status -------------------------------------------------------------------------------------------


def test_status_lists_promoted_validated_and_blocked_days(backfill_result, dry_run, failing_backfill, spark):
    snapshot = current_snapshot_id(spark, PRODUCTION)
    result = invoke("status")
    assert result.exit_code == 0
    for day in PROMOTED_DAYS:
        assert table_row(result.output, DATASET, day)[2:4] == ["promoted", f"v2 @ {snapshot}"]
    assert table_row(result.output, DATASET, DRY_RUN_DAY)[2:4] == ["validated", "-"]
    blocked = table_row(result.output, STRICT_DATASET, FAILING_DAY)
    assert blocked[2] == "blocked" and "events failed quarantine_ratio" in blocked[4]


def test_a_summed_report_adds_up_the_days_it_joins(backfill_result, spark, truth):
    # Run last (it validates the promoted days again): a long range's report sums passed days per month;
    # --summed asks for that form on two days.
    result = invoke("backfill", "--dataset", DATASET, "--start", PROMOTED_DAYS[0], "--end", "2026-10-04",
                    "--dry-run", "--summed")  # fmt: skip
    assert result.exit_code == 0, result.output
    snapshot = current_snapshot_id(spark, PRODUCTION)
    counts = {
        r["event_date"].isoformat(): r["count"]
        for r in spark.table(PRODUCTION).groupBy("event_date").count().collect()
    }
    cells = table_row(result.output, f"{PROMOTED_DAYS[0]}…{PROMOTED_DAYS[1]} (2 days)")
    records = sum(truth["partitions"][day]["records"] for day in PROMOTED_DAYS)
    written = sum(truth["partitions"][day]["written"] for day in PROMOTED_DAYS)
    assert cells[1:3] == [f"{records:,}", f"{written:,}"]
    assert cells[5:] == [
        f"{sum(counts[d] for d in PROMOTED_DAYS):,}",
        "passed",
        f"v2 @ {snapshot}",
        "dry run",
    ]
    assert "passed days summed per month" in " ".join(result.output.split())
    assert not any(
        line.startswith(f"│ {day} ") for line in result.output.splitlines() for day in PROMOTED_DAYS
    )
