"""A 5-day backfill from the command line, end to end.

`dagster asset materialize --partition-range` runs events → shadow v2 → production of
`views_per_title` for the whole generated archive in one run, in a real subprocess with its own
Dagster instance, its own JVM and its own data directory (a copy of the generated archive). Everything is
then read back — the run and its materializations from that instance, the ledger and the tables with a
Spark session of this process bound to that lakehouse — instead of trusting the command's output.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance, DagsterRunStatus
from pyspark.sql import functions as F

from backfill_platform import settings
from backfill_platform.lakehouse.snapshots import current_snapshot_id
from backfill_platform.orchestration.dagster_home import write_dagster_home
from backfill_platform.pipeline.promotion.promote import ACTION, RANGE_END, RANGE_START
from backfill_platform_tests.support.datasets import LEDGER, production, shadow_table_of
from backfill_platform_tests.support.lakehouse import lakehouse_session, own_data_dir
from backfill_platform_tests.support.session import DAGSTER_CLI, DAYS, REPO_ROOT, START

pytestmark = pytest.mark.other_writers

DAYS_OF_RANGE = [(START + timedelta(days=i)).isoformat() for i in range(DAYS)]
RANGE_END_EXCLUSIVE = (START + timedelta(days=DAYS)).isoformat()
ASSET_KEYS = [
    AssetKey(["raw", "playback_events"]),
    AssetKey(["shadow", "views_per_title__v2"]),
    AssetKey(["prod", "views_per_title_production"]),
]
SHADOW = shadow_table_of("views_per_title")
PRODUCTION = production("views_per_title").table
CLI_TIMEOUT_SECONDS = 600


def run_cli_backfill(data_dir: Path, dagster_home: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        settings.DATA_DIR_ENV: str(data_dir),
        "DAGSTER_HOME": str(dagster_home),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "DAGSTER_DISABLE_TELEMETRY": "1",
    }
    command = [
        str(DAGSTER_CLI),
        "asset",
        "materialize",
        "-m",
        "backfill_platform.definitions",
        "--select",
        ",".join(key.to_user_string() for key in ASSET_KEYS),
        "--partition-range",
        f"{DAYS_OF_RANGE[0]}...{DAYS_OF_RANGE[-1]}",
    ]
    return subprocess.run(
        command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=CLI_TIMEOUT_SECONDS
    )


def reader(spark, data_dir: Path):
    """A new session on the subprocess's lakehouse (its own catalog instance and JDBC connections)."""
    return lakehouse_session(spark, data_dir)


def refresh_tables(spark, *identifiers: str) -> None:
    """Drop this session's cached Iceberg metadata: the subprocess committed behind its back."""
    for identifier in identifiers:
        spark.sql(f"REFRESH TABLE {identifier}")


def rows_per_day(spark, identifier: str) -> dict[str, int]:
    in_range = spark.table(identifier).where(F.col("event_date").isin(DAYS_OF_RANGE))
    return {
        row["event_date"].isoformat(): row["count"]
        for row in in_range.groupBy("event_date").count().collect()
    }


@pytest.fixture(scope="module")
def cli_data(playback_archive: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The data directory the CLI's run commits to: a copy of the generated archive, a catalog of its own."""
    return own_data_dir(tmp_path_factory.mktemp("cli_backfill_data"), playback_archive)


@pytest.fixture(scope="module")
def cli_backfill(cli_data: Path, tmp_path_factory: pytest.TempPathFactory) -> DagsterInstance:
    """Run the backfill once through the CLI; return the Dagster instance it recorded into."""
    dagster_home = tmp_path_factory.mktemp("dagster_home")
    write_dagster_home(dagster_home)
    completed = run_cli_backfill(cli_data, dagster_home)
    if completed.returncode != 0:
        sys.stderr.write(completed.stderr[-6000:])
    assert completed.returncode == 0, f"dagster asset materialize failed:\n{completed.stderr[-3000:]}"
    return DagsterInstance.from_config(str(dagster_home))


@pytest.fixture(scope="module")
def backfill_run(cli_backfill: DagsterInstance):
    runs = cli_backfill.get_runs()
    assert len(runs) == 1, [(r.run_id, r.status) for r in runs]
    assert runs[0].status == DagsterRunStatus.SUCCESS
    return runs[0]


def test_one_run_materializes_every_partition_of_the_three_assets(cli_backfill, backfill_run):
    for key in ASSET_KEYS:
        records = cli_backfill.fetch_materializations(key, limit=100).records
        assert {r.run_id for r in records} == {backfill_run.run_id}, key
        assert sorted(r.partition_key for r in records) == DAYS_OF_RANGE, key


def test_ledger_holds_the_counts_of_every_day_and_the_promotion(
    cli_backfill, backfill_run, cli_data, truth, spark
):
    spark = reader(spark, cli_data)
    refresh_tables(spark, LEDGER, PRODUCTION)
    production_snapshot = current_snapshot_id(spark, PRODUCTION)
    rows = (
        spark.table(LEDGER)
        .where(
            (F.col("dataset") == "views_per_title")
            & (F.col("version") == "v2")
            & (F.col("run_id") == backfill_run.run_id)
        )
        .collect()
    )
    assert sorted(row["partition_date"].isoformat() for row in rows) == DAYS_OF_RANGE
    for row in rows:
        day = row["partition_date"].isoformat()
        expected = truth["partitions"][day]
        assert row["checks_passed"] is True, (day, row["failed_checks"])
        assert row["records"] == expected["records"], day
        assert row["events_written"] == expected["written"], day
        assert row["duplicates"] == expected["duplicates"], day
        assert row["quarantined"] == sum(expected["quarantined"].values()), day
        assert row["shadow_rows"] > 0, day
        assert row["promoted_snapshot_id"] == production_snapshot, day
        assert row["promotion_run_id"] == backfill_run.run_id, day


def test_production_equals_the_shadow_and_names_the_run(cli_backfill, backfill_run, cli_data, spark):
    spark = reader(spark, cli_data)
    refresh_tables(spark, SHADOW, PRODUCTION)
    shadow_counts = rows_per_day(spark, SHADOW)
    assert sorted(shadow_counts) == DAYS_OF_RANGE
    assert rows_per_day(spark, PRODUCTION) == shadow_counts

    summary = spark.sql(
        f"SELECT s.summary FROM {PRODUCTION}.snapshots s JOIN {PRODUCTION}.refs r "
        "ON s.snapshot_id = r.snapshot_id WHERE r.name = 'main'"
    ).first()["summary"]
    assert summary[ACTION] == "promote"
    assert (summary[RANGE_START], summary[RANGE_END]) == (DAYS_OF_RANGE[0], RANGE_END_EXCLUSIVE)
    assert summary["dagster.run-id"] == backfill_run.run_id
