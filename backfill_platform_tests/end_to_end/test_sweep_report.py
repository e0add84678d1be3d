"""`backfill-platform sweep | report`, in process through click's CliRunner, on a promoted copy.

Three days of a copy of the session archive (`playback_sweep` → `views_sweep`, so that no other
module's tables are touched) are promoted by `backfill`; `report` is compared with the ledger read back
by Spark; `sweep` is run on the untouched production (nothing to propose), then production is changed
behind the platform's back with Spark SQL — `views` raised on one day (the events' reconciliation
catches it), `unique_viewers` on another (no rule covers it: only the ledger's fingerprint does) — and
`sweep` must name exactly those days and the commands that re-derive them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import Result
from pyspark.sql import functions as F

from backfill_platform import settings
from backfill_platform.lakehouse.snapshots import current_snapshot_id
from backfill_platform.orchestration.dagster_home import write_dagster_home
from backfill_platform_tests.support.cli import invoke, table_row
from backfill_platform_tests.support.dagster_dev import VIEWS_BACKFILL_DAYS
from backfill_platform_tests.support.datasets import LEDGER, production
from backfill_platform_tests.support.projects import write_project
from backfill_platform_tests.support.streams import stream_copy_specs

STREAM, DATASET = "playback_sweep", "views_sweep"
PRODUCTION = production(DATASET).table
DAYS = ["2026-10-01", "2026-10-02", "2026-10-03"]
VIEWS_DAY, VIEWERS_DAY = "2026-10-02", "2026-10-03"


@pytest.fixture(scope="module")
def sweep_env(truth, data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A project of a copy of the session archive and a Dagster instance of this module's own."""
    specs = stream_copy_specs(data_dir, STREAM, DATASET, drop_hours=[])
    project = write_project(tmp_path_factory.mktemp("sweep_project"), specs)
    home = tmp_path_factory.mktemp("sweep_dagster_home")
    write_dagster_home(home)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(project.root)  # the CLI's project, as `dg`'s: the one of its working directory
        patch.setenv("DAGSTER_HOME", str(home))
        yield home


@pytest.fixture(scope="module")
def promoted(sweep_env, spark) -> list:
    """The three days backfilled and promoted; their ledger rows read back."""
    result = invoke("backfill", "--dataset", DATASET, "--start", DAYS[0], "--end", "2026-10-04")
    assert result.exit_code == 0
    rows = spark.table(LEDGER).where(F.col("dataset") == DATASET).collect()
    assert sorted(r["partition_date"].isoformat() for r in rows) == DAYS
    return rows


@pytest.fixture(scope="module")
def clean_sweep(promoted, spark) -> tuple[Result, int]:
    """The sweep of untouched production, and production's snapshot it swept (later fixtures change
    production: tests read it at that snapshot)."""
    return invoke("sweep", "--dataset", DATASET), current_snapshot_id(spark, PRODUCTION)


@pytest.fixture(scope="module")
def report(promoted, spark, tmp_path_factory: pytest.TempPathFactory) -> tuple[Result, str, int]:
    """The report of the backfill, what it wrote, and production's snapshot when it was made."""
    out = tmp_path_factory.mktemp("report") / "report.md"
    result = invoke("report", "--backfill", promoted[0]["run_id"], "--out", str(out))
    return result, out.read_text(), current_snapshot_id(spark, PRODUCTION)


def update(spark, assignment: str, where: str) -> None:
    """Change production with plain Spark SQL: an Iceberg commit the platform knows nothing of."""
    spark.sql(f"UPDATE {PRODUCTION} SET {assignment} WHERE {where}")


@pytest.fixture(scope="module")
def views_changed(clean_sweep, report, spark) -> Result:
    """`views` raised in one hour of VIEWS_DAY (after the clean sweep and the report); the sweep of it."""
    where = f"event_date = DATE '{VIEWS_DAY}' AND event_hour = 7"
    assert spark.table(PRODUCTION).where(where).count() > 0
    update(spark, "views = views + 1", where)
    return invoke("sweep", "--dataset", DATASET)


@pytest.fixture(scope="module")
def viewers_changed(views_changed, spark) -> None:
    """Then `unique_viewers`, which no reconciliation rule covers, raised on all of VIEWERS_DAY."""
    update(spark, "unique_viewers = unique_viewers + 1", f"event_date = DATE '{VIEWERS_DAY}'")


def markdown_rows(markdown: str, first_cell: str) -> list[list[str]]:
    """The cells of every markdown table row whose first cell is `first_cell`."""
    rows = [
        [c.strip() for c in line.strip("|").split("|")]
        for line in markdown.splitlines()
        if line.startswith("| ")
    ]
    return [r for r in rows if r[0] == first_cell]


def test_sweep_of_untouched_production_proposes_nothing(clean_sweep, spark):
    clean_sweep, snapshot = clean_sweep
    assert clean_sweep.exit_code == 0
    swept = spark.read.option("snapshot-id", snapshot).table(PRODUCTION)  # production as it was swept
    counts = {r[0].isoformat(): r[1] for r in swept.groupBy("event_date").count().collect()}
    views = {r[0].isoformat(): r[1] for r in swept.groupBy("event_date").sum("views").collect()}
    for day in DAYS:
        cells = table_row(clean_sweep.output, day)
        assert cells[1] == cells[2] == f"{counts[day]:,}"  # production's rows = what the events imply
        assert cells[3] == f"{views[day]:,} / {views[day]:,}"
        assert cells[-3:] == ["as recorded", f"v2 @ {snapshot}", "ok"]
    assert "no divergent day in 3 day(s)" in clean_sweep.output
    assert "backfill-platform backfill" not in clean_sweep.output


def test_report_of_the_run_prints_the_ledgers_numbers(report, promoted):
    result, written, snapshot = report
    assert result.exit_code == 0
    assert result.output == written
    run_id = promoted[0]["run_id"]
    assert written.startswith(f"# Backfill report: {run_id}\n")
    assert "## views_sweep" in written
    for row in promoted:
        cells = markdown_rows(written, row["partition_date"].isoformat())
        assert len(cells) == 1
        expected = [
            row["partition_date"].isoformat(), "v2", run_id, f"{row['records']:,}", f"{row['events_written']:,}",
            f"{row['duplicates']:,}", f"{row['quarantined']:,}", f"{row['erased']:,}", f"{row['late']:,}",
            f"{row['shadow_rows']:,}", row["shadow_row_hash"], f"{row['diverging_rows']:,}", "passed",
            str(row["promoted_snapshot_id"]), f"{row['promoted_at']:%Y-%m-%d %H:%M:%S} UTC",
            row["input_partitions"] or "-",
        ]  # fmt: skip
        assert cells[0] == expected
    # `late` is defined where it is read, once, before the commits.
    assert written.count("*late: events written whose archive line sits in a later ingestion hour") == 1
    assert written.index("*late: ") < written.index("## Production commits")
    # The promotion commit, from production's own snapshot properties.
    [commit] = markdown_rows(written, DATASET)
    assert commit[1] == str(promoted[0]["promoted_snapshot_id"]) == str(snapshot)
    assert commit[3:] == ["promote", "v2", ", ".join(DAYS), run_id]


def test_report_of_an_unknown_id_is_a_clear_error(sweep_env):
    result = invoke("report", "--backfill", "no-such-run")
    assert result.exit_code == 1
    assert (
        "no ledger row, events run or production snapshot names backfill or run 'no-such-run'"
        in result.output
    )


@pytest.mark.other_writers
def test_report_of_a_dagster_backfill_names_its_run_and_promotion(views_backfill, dagster_dev, monkeypatch):
    """The session's GraphQL backfill (launched through `dagster dev`): its id finds its run through
    the Dagster instance, the ledger rows tagged with it, and the promotion snapshot naming it (in the
    lakehouse of `dagster dev`, read through PyIceberg)."""
    backfill_id, run_id = views_backfill["id"], views_backfill["runs"][0]["runId"]
    monkeypatch.setenv("DAGSTER_HOME", str(dagster_dev.dagster_home))
    monkeypatch.setenv(settings.DATA_DIR_ENV, str(dagster_dev.data_dir))
    result = invoke("report", "--backfill", backfill_id)
    assert result.exit_code == 0
    assert f"Dagster backfill of 1 run(s): {run_id}" in result.output
    for day in VIEWS_BACKFILL_DAYS:
        # A validation row per dataset of the backfill (views_per_title and the join attributed_plays).
        validations = [cells for cells in markdown_rows(result.output, day) if len(cells) > 11]
        assert len(validations) == 2, validations
        for cells in validations:
            assert cells[1:3] == ["v2", run_id] and cells[12] == "passed"
    [commit] = [c for c in markdown_rows(result.output, "views_per_title") if c[3] == "promote"]
    assert commit[5:] == [", ".join(VIEWS_BACKFILL_DAYS), run_id]


def test_sweep_proposes_exactly_the_day_changed_behind_the_platforms_back(views_changed):
    result = views_changed
    assert result.exit_code == 1
    assert {day: table_row(result.output, day)[-1] for day in DAYS} == {
        DAYS[0]: "ok",
        VIEWS_DAY: "divergent",
        VIEWERS_DAY: "ok",
    }
    # The events' reconciliation (one hour bucket) and the ledger's fingerprint both see it.
    assert re.search(rf"{VIEWS_DAY} checksums_per_bucket: 1 of \d+ hour buckets' sums differ", result.output)
    assert f"{VIEWS_DAY} row_counts_per_bucket" not in result.output
    assert f"{VIEWS_DAY} fingerprint: changed behind the platform's back" in result.output
    assert table_row(result.output, VIEWS_DAY)[-3] == "differs"
    command = f"backfill-platform backfill --dataset {DATASET} --start {VIEWS_DAY} --end {VIEWERS_DAY}"
    assert proposed(result) == [command]


def test_sweep_sees_a_change_no_reconciliation_rule_covers_and_joins_adjacent_days(viewers_changed):
    result = invoke("sweep", "--dataset", DATASET)
    assert result.exit_code == 1
    assert table_row(result.output, VIEWERS_DAY)[-1] == "divergent"
    # unique_viewers: rows and sums still reconcile; only the ledger's fingerprint catches it.
    assert f"{VIEWERS_DAY} checksums_per_bucket" not in result.output
    assert f"{VIEWERS_DAY} row_counts_per_bucket" not in result.output
    assert f"{VIEWERS_DAY} fingerprint: changed behind the platform's back" in result.output
    assert proposed(result) == [
        f"backfill-platform backfill --dataset {DATASET} --start {VIEWS_DAY} --end 2026-10-04"
    ]


def test_sweep_of_a_range_checks_only_that_range(viewers_changed):
    clean = invoke("sweep", "--dataset", DATASET, "--start", DAYS[0], "--end", VIEWS_DAY)
    assert clean.exit_code == 0 and "no divergent day in 1 day(s)" in clean.output
    one = invoke("sweep", "--dataset", DATASET, "--start", VIEWERS_DAY, "--end", "2026-10-04")
    assert one.exit_code == 1
    assert proposed(one) == [
        f"backfill-platform backfill --dataset {DATASET} --start {VIEWERS_DAY} --end 2026-10-04"
    ]


def proposed(result: Result) -> list[str]:
    return [
        line.strip() for line in result.output.splitlines() if line.strip().startswith("backfill-platform ")
    ]
