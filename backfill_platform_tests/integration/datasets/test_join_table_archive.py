"""A join of a folder archive and a table archive works like a join of two folder archives.

The demo's join (`attributed_plays`, impressions read from 30 minutes before each day) over a copy of
the playback archive (files) and the impressions archive landed in an Iceberg table
(`iceberg_landing.land_folder_archive`: the same records in the same ingestion hours). One backfill of
2026-10-02..03 through the CLI, in process: production's plays are attributed exactly as the generator's
truth computed in plain Python from the folder archives, the plays led by an impression of the day before
the range among them (read from the table by the lookback).
"""

from __future__ import annotations

import shutil
from datetime import date
from pathlib import Path

import pytest
from dagster import DagsterInstance, RunsFilter
from pyspark.sql import functions as F

from backfill_platform.components.registry import demo_spec_data
from backfill_platform.devtools.generator.iceberg_landing import create_landing_table, land_folder_archive
from backfill_platform.devtools.generator.impressions import attribution_truth
from backfill_platform.lakehouse.resources import open_catalog
from backfill_platform.orchestration.dagster_home import write_dagster_home
from backfill_platform.pipeline.ledger.ledger import latest_ingestions
from backfill_platform_tests.support.cli import invoke
from backfill_platform_tests.support.datasets import join_spec_data, production
from backfill_platform_tests.support.projects import write_project

PLAYBACK, IMPRESSIONS, DATASET = "playback_files", "impressions_table", "attributed_mixed"
BEFORE, DAYS, END = "2026-10-01", ["2026-10-02", "2026-10-03"], "2026-10-04"
LANDING = "raw_landing.impressions"


@pytest.fixture(scope="module")
def mixed_env(truth, data_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    """Playback as a folder archive, impressions as a landing table, the join on them, and a Dagster
    instance of their own."""
    shutil.copytree(data_dir / "archive" / "playback", data_dir / "archive" / PLAYBACK, dirs_exist_ok=True)
    playback = demo_spec_data("playback")
    playback.update(name=PLAYBACK, archive={**playback["archive"], "location": f"archive/{PLAYBACK}"})

    impressions = demo_spec_data("impressions")
    table = create_landing_table(open_catalog(), LANDING)
    landed = land_folder_archive(
        table,
        data_dir / "archive" / "impressions",
        impressions["archive"].get("layout", "%Y/%m/%d/%H"),
        "impressions",
    )
    assert landed > 0
    impressions.update(name=IMPRESSIONS, archive={"iceberg_table": LANDING, "payload_column": "payload"})
    join = join_spec_data(DATASET, PLAYBACK, IMPRESSIONS, "attributed_from_table")
    project = write_project(tmp_path_factory.mktemp("mixed_project"), [playback, impressions, join])
    home = tmp_path_factory.mktemp("mixed_home")
    write_dagster_home(home)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(project.root)  # the CLI's project, as `dg`'s: the one of its working directory
        patch.setenv("DAGSTER_HOME", str(home))
        with DagsterInstance.get() as instance:
            yield instance


def test_a_join_of_files_and_a_table_is_the_attribution(mixed_env, spark, data_dir):
    result = invoke("backfill", "--dataset", DATASET, "--start", DAYS[0], "--end", END, "--reason", "mixed")
    assert result.exit_code == 0, result.output
    runs = mixed_env.get_runs(filters=RunsFilter(tags={"backfill_platform/reason": "mixed"}))
    assert len(runs) == 1
    # The table's day before the range was read by the lookback, in the same run.
    ingested = latest_ingestions(spark, IMPRESSIONS, [date.fromisoformat(d) for d in [BEFORE, *DAYS]])
    assert {d: r["run_id"] for d, r in ingested.items()} == dict.fromkeys([BEFORE, *DAYS], runs[0].run_id)

    table = production(DATASET).table
    spark.sql(f"REFRESH TABLE {table}")
    rows = spark.table(table).where(F.col("play_date").isin(DAYS)).collect()
    got = {r["play_id"]: (r["play_date"].isoformat(), r["impression_id"]) for r in rows}
    truth = attribution_truth(data_dir / "archive" / "playback", data_dir / "archive" / "impressions", DAYS)
    assert got == {play: (t["day"], t["impression_id"]) for play, t in truth.items()}
    across = [p for p, t in truth.items() if t["across_midnight"] and t["day"] == DAYS[0]]
    assert across and all(got[p][1] is not None for p in across)
