"""`backfill-platform backfill` over an hourly stream, in process through click's CliRunner.

A deploy was wrong from 18:10 to 19:40: the engineer names those times, and the command re-derives and
promotes exactly the hours they touch (18:00 and 19:00), reports them hour by hour from the ledger, and
`status` lists them; production holds those hours and no other, each equal to the generator's truth.
A daily New York dataset over the same hours is backfilled by day: the hours its days read first, then its
days, each reported with its hours' figures summed and equal to an independent computation.
"""

from __future__ import annotations

import gzip
import shutil
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from pyspark.sql import functions as F

from backfill_platform.components.registry import demo_spec_data
from backfill_platform.lakehouse.tables import table_exists
from backfill_platform.orchestration.dagster_home import write_dagster_home
from backfill_platform_tests.support.cli import invoke, table_row
from backfill_platform_tests.support.datasets import (
    INGESTIONS,
    LEDGER,
    hourly_dataset_data,
    lake_table,
    local_daily_data,
    production,
)
from backfill_platform_tests.support.projects import write_project
from backfill_platform_tests.support.session import D2

STREAM, DATASET, NEW_YORK_DATASET = "playback_cli_hourly", "views_cli_hourly", "plays_cli_new_york"
HOURS = ["2026-10-02-18:00", "2026-10-02-19:00"]
PRODUCTION = production(DATASET).table


@pytest.fixture(scope="module")
def cli_env(truth, data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A copy of the session archive declared as an hourly stream, the hourly dataset over it, and a
    Dagster instance of its own."""
    archive = data_dir / "archive" / STREAM
    if not archive.exists():
        shutil.copytree(data_dir / "archive" / "playback", archive)
    stream = demo_spec_data("playback")
    # About 80 events an hour: one quarantined line is over 1 %, so the ratio has the floor hours need.
    stream.update(name=STREAM, partition_grain="hour", max_quarantined_per_day=3)
    stream["archive"]["location"] = f"archive/{STREAM}"
    specs = [
        stream,
        hourly_dataset_data("v1", STREAM, DATASET),
        local_daily_data(NEW_YORK_DATASET, STREAM, "America/New_York"),
    ]
    project = write_project(tmp_path_factory.mktemp("cli_hourly_project"), specs)
    home = tmp_path_factory.mktemp("cli_hourly_dagster_home")
    write_dagster_home(home)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(project.root)  # the CLI's project, as `dg`'s: the one of its working directory
        patch.setenv("DAGSTER_HOME", str(home))
        yield home


@pytest.fixture(scope="module")
def hourly_backfill(cli_env):
    return invoke("backfill", "--dataset", DATASET, "--start", "2026-10-02T18:10", "--end", "2026-10-02T19:40",
                  "--reason", "bad deploy 18:10-19:40")  # fmt: skip


def test_an_hourly_backfill_promotes_exactly_the_hours_its_times_touch(hourly_backfill, spark, truth):
    assert hourly_backfill.exit_code == 0, hourly_backfill.output
    assert "promoted 2 hour(s)" in hourly_backfill.output
    # D2's hours only: the policy test below may have written hours of another day first.
    ledger = (
        spark.table(LEDGER).where((F.col("dataset") == DATASET) & (F.col("partition_date") == D2)).collect()
    )
    assert sorted(r.partition_key for r in ledger) == HOURS
    for row in ledger:
        cells = table_row(hourly_backfill.output, row.partition_key)
        assert cells[5] == f"{row.shadow_rows:,}" and cells[6] == "passed" and cells[-1] == "promoted"
    views = (
        spark.table(PRODUCTION)
        .groupBy(F.date_format("event_hour", "yyyy-MM-dd-HH:mm").alias("hour"))
        .agg(F.sum("views").alias("views"))
        .collect()
    )
    starts = truth["partitions"][D2.isoformat()]["starts_by_hour"]
    assert {r.hour: r.views for r in views} == {hour: starts[str(int(hour[11:13]))] for hour in HOURS}


def test_status_lists_the_promoted_hours(hourly_backfill):
    result = invoke("status", "--dataset", DATASET)
    assert result.exit_code == 0
    for hour in HOURS:
        assert "promoted" in table_row(result.output, hour)


def test_a_new_york_daily_dataset_is_backfilled_from_the_hours_its_days_read(cli_env, spark):
    days = ["2026-10-02", "2026-10-03"]
    result = invoke("backfill", "--dataset", NEW_YORK_DATASET, "--start", days[0], "--end", "2026-10-04")
    assert result.exit_code == 0, result.output
    assert "promoted 2 day(s)" in result.output
    # Each day's row sums its 24 New York hours (04:00 to 04:00 UTC in October) as ingested.
    ingested = spark.table(INGESTIONS).where(F.col("stream") == STREAM).toPandas()
    ingested["start"] = pd.to_datetime(ingested["partition_key"], format="%Y-%m-%d-%H:%M", utc=True)
    ingested["day"] = ingested["start"].dt.tz_convert("America/New_York").dt.date.astype(str)
    latest = ingested.sort_values("recorded_at").groupby("partition_key").last()
    for day in days:
        hours = latest[latest["day"] == day]
        assert len(hours) == 24
        cells = table_row(result.output, day)
        assert cells[1] == f"{int(hours['records'].sum()):,}" and cells[6] == "passed", cells
    rows = spark.table(production(NEW_YORK_DATASET).table).toPandas()
    events = (
        spark.table(lake_table("raw", f"{STREAM}_events")).where(F.col("event_type") == "start").toPandas()
    )
    local = pd.to_datetime(events["event_time"]).dt.tz_localize("UTC").dt.tz_convert("America/New_York")
    expected = events.assign(day=local.dt.date.astype(str)).query("day in @days").groupby("day").size()
    assert rows.assign(day=rows["event_date"].astype(str)).groupby("day")["plays"].sum().to_dict() == (
        expected.to_dict()
    )


def production_hours(spark) -> dict[str, int]:
    """Views per hour key in production (none before its first promotion)."""
    if not table_exists(spark, PRODUCTION):
        return {}
    hour = F.date_format("event_hour", "yyyy-MM-dd-HH:mm").alias("hour")
    return {
        r.hour: r.views
        for r in spark.table(PRODUCTION).groupBy(hour).agg(F.sum("views").alias("views")).collect()
    }


def test_the_per_partition_policy_holds_back_one_hour_and_revert_restores_exactly_the_others(
    cli_env, data_dir: Path, spark
):
    """An ingestion hour holds a file of ten malformed lines: its hour fails `quarantine_ratio` (over the
    floor of 3). With `--policy per-day` the hours around it are promoted in one commit and it is held
    back; `revert` then restores exactly those two hours."""
    folder = data_dir / "archive" / STREAM / "2026" / "10" / "01" / "11"
    (folder / "playback-2026-10-01-11-9100.jsonl.gz").write_bytes(gzip.compress(b"{not json\n" * 10, mtime=0))
    before = production_hours(spark)
    result = invoke("backfill", "--dataset", DATASET, "--start", "2026-10-01T10:00", "--end", "2026-10-01T13:00",
                    "--policy", "per-day")  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "held back: 2026-10-01-11:00; production keeps them" in result.output
    assert (
        "quarantine_ratio" in table_row(result.output, "2026-10-01-11:00")[-1]
        or "quarantine_ratio" in result.output
    )
    promoted = production_hours(spark)
    assert set(promoted) - set(before) == {"2026-10-01-10:00", "2026-10-01-12:00"}
    assert {k: promoted[k] for k in before} == before

    reverted = invoke("revert", "--dataset", DATASET)
    assert reverted.exit_code == 0, reverted.output
    assert "for 2026-10-01-10:00, 2026-10-01-12:00:" in reverted.output
    assert production_hours(spark) == before
