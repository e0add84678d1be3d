"""A join's range has an edge before it: the source day its lookback reads, in the same backfill run.

`backfill-platform backfill --dataset` (in process, click's CliRunner, on the session's Spark) of a copy of
the demo's join (`attributed_plays` over copies of both streams, impressions read from 30 minutes before
each day) for 2026-10-02..03. Day 2026-10-02 reads the last half hour of impressions 2026-10-01, which
nothing ingested before: the first backfill ingests it in its own run and promotes both days; a second
backfill of the same range finds it ingested, passed and its archive unchanged, re-reads it and does not
re-derive it; once a file of its read window changes, it would be ingested again. Read back: the ledger
(Spark), the Dagster instance's materializations, and production's rows against the generator's
attribution, computed in plain Python from the archives.
"""

from __future__ import annotations

import gzip
import shutil
from datetime import date
from pathlib import Path

import pytest
from dagster import AssetKey, AssetRecordsFilter, DagsterInstance, RunsFilter
from pyspark.sql import functions as F

from backfill_platform.components.registry import demo_spec_data, project_specs
from backfill_platform.devtools.generator.impressions import attribution_truth
from backfill_platform.orchestration.dagster_home import write_dagster_home
from backfill_platform.pipeline.archive.stream_archive import archive_for
from backfill_platform.pipeline.events.ingest import window_files
from backfill_platform.pipeline.events.partitions_before import PartitionsBefore, partitions_before
from backfill_platform.pipeline.hour_mapping import ReadPlan
from backfill_platform.pipeline.ledger.ledger import latest_ingestions, latest_shadow_rows
from backfill_platform.pipeline.run_settings import (
    PARTITIONS_BEFORE_TAG,
    RunSettingsError,
    partitions_before_tag,
    run_settings,
)
from backfill_platform.specs.durations import day_bounds
from backfill_platform.specs.grain import DAILY
from backfill_platform_tests.support.cli import invoke
from backfill_platform_tests.support.datasets import join_spec_data, production
from backfill_platform_tests.support.projects import write_project

PLAYBACK, IMPRESSIONS, DATASET = "playback_before", "impressions_before", "attributed_before"
BEFORE, DAYS, END = "2026-10-01", ["2026-10-02", "2026-10-03"], "2026-10-04"
IMPRESSIONS_EVENTS = AssetKey(["raw", f"{IMPRESSIONS}_events"])
PRODUCTION = production(DATASET).table
FIRST_REASON, SECOND_REASON = "days before, first", "days before, again"
# A join with lookback, on every Spark line (`make test-other-spark`).
pytestmark = pytest.mark.both_spark_lines


@pytest.fixture(scope="module")
def join_env(truth, data_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    """Copies of both generated archives, declared as streams of their own, the join on them, and a
    Dagster instance of its own; yields that instance."""
    specs = []
    for builtin, name in (("playback", PLAYBACK), ("impressions", IMPRESSIONS)):
        shutil.copytree(data_dir / "archive" / builtin, data_dir / "archive" / name, dirs_exist_ok=True)
        stream = demo_spec_data(builtin)
        stream.update(name=name, archive={**stream["archive"], "location": f"archive/{name}"})
        specs.append(stream)
    specs.append(join_spec_data(DATASET, PLAYBACK, IMPRESSIONS, "attributed_before"))
    project = write_project(tmp_path_factory.mktemp("days_before_project"), specs)
    home = tmp_path_factory.mktemp("days_before_home")
    write_dagster_home(home)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(project.root)  # the CLI's project, as `dg`'s: the one of its working directory
        patch.setenv("DAGSTER_HOME", str(home))
        with DagsterInstance.get() as instance:
            yield instance


def backfill(instance: DagsterInstance, reason: str) -> tuple[str, str]:
    """(the command's output, its run id) after a backfill of DAYS that must succeed."""
    result = invoke("backfill", "--dataset", DATASET, "--start", DAYS[0], "--end", END, "--reason", reason)
    assert result.exit_code == 0, result.output
    runs = instance.get_runs(filters=RunsFilter(tags={"backfill_platform/reason": reason}))
    assert len(runs) == 1, runs
    return result.output, runs[0].run_id


@pytest.fixture(scope="module")
def first_backfill(join_env) -> tuple[str, str]:
    return backfill(join_env, FIRST_REASON)


@pytest.fixture(scope="module")
def second_backfill(join_env, first_backfill) -> tuple[str, str]:
    return backfill(join_env, SECOND_REASON)


def materializing_runs(instance: DagsterInstance, day: str) -> list[str]:
    records = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=IMPRESSIONS_EVENTS, asset_partitions=[day]), limit=10
    ).records
    return [r.run_id for r in records]


def assert_production_is_the_attribution(spark, data_dir: Path, run_id: str) -> None:
    """Both days promoted by `run_id`, and production's plays attributed exactly as the generator's
    truth, the plays led by an impression of the day before the range among them."""
    shadow = latest_shadow_rows(spark, DATASET, "v2", [date.fromisoformat(d) for d in DAYS])
    assert {d: (r["checks_passed"], r["promotion_run_id"]) for d, r in shadow.items()} == dict.fromkeys(
        DAYS, (True, run_id)
    )
    spark.sql(f"REFRESH TABLE {PRODUCTION}")
    rows = spark.table(PRODUCTION).where(F.col("play_date").isin(DAYS)).collect()
    production = {r["play_id"]: (r["play_date"].isoformat(), r["impression_id"]) for r in rows}
    truth = attribution_truth(data_dir / "archive" / PLAYBACK, data_dir / "archive" / IMPRESSIONS, DAYS)
    assert production == {play: (t["day"], t["impression_id"]) for play, t in truth.items()}
    across = [p for p, t in truth.items() if t["across_midnight"] and t["day"] == DAYS[0]]
    assert across, "2026-10-02 must hold plays led by an impression of 2026-10-01"
    assert all(production[p][1] is not None for p in across)


def test_one_backfill_ingests_the_source_day_before_the_range(first_backfill, join_env, spark, data_dir):
    output, run_id = first_backfill
    ingested = latest_ingestions(spark, IMPRESSIONS, [date.fromisoformat(d) for d in [BEFORE, *DAYS]])
    assert {d: (r["run_id"], r["checks_passed"]) for d, r in ingested.items()} == dict.fromkeys(
        [BEFORE, *DAYS], (run_id, True)
    )
    assert ingested[BEFORE]["records"] > 0
    # Only the source whose lookback reaches before the range: playback's day before is not read.
    assert latest_ingestions(spark, PLAYBACK, [date.fromisoformat(BEFORE)]) == {}
    assert materializing_runs(join_env, BEFORE) == [run_id]
    assert f"{IMPRESSIONS} {BEFORE} (read by the lookback of {DAYS[0]}): ingested by this run" in output
    assert_production_is_the_attribution(spark, data_dir, run_id)


def test_a_source_day_already_ingested_is_re_read_not_re_derived(
    first_backfill, second_backfill, join_env, spark, data_dir
):
    first_run = first_backfill[1]
    output, run_id = second_backfill
    ingested = latest_ingestions(spark, IMPRESSIONS, [date.fromisoformat(d) for d in [BEFORE, *DAYS]])
    assert {d: r["run_id"] for d, r in ingested.items()} == {
        BEFORE: first_run,
        DAYS[0]: run_id,
        DAYS[1]: run_id,
    }
    # The day before keeps the first run's events and its only materialization.
    assert materializing_runs(join_env, BEFORE) == [first_run]
    log = [e.message for e in join_env.all_logs(run_id) if e.message and "read as it is" in e.message]
    assert any(f"{BEFORE} read as it is (ingested in run {first_run}, unchanged)" in m for m in log), log
    assert f"read as it was, not re-derived (ingested by run {first_run}, checks passed)" in output
    assert_production_is_the_attribution(spark, data_dir, run_id)


def test_a_source_day_whose_read_window_changed_is_ingested_again(first_backfill, join_env, spark, data_dir):
    """What the events step decides for the day before, on a copy of the impressions archive (the stream's
    own is left alone): as it is while the copy lists the same files, ingested once a file is added to
    an hour of its read window."""
    first_run = first_backfill[1]
    stream = project_specs().streams[IMPRESSIONS]  # the working directory's project: join_env's
    copy = data_dir / "archive" / "impressions_before_changed"
    shutil.copytree(data_dir / "archive" / IMPRESSIONS, copy)  # modification times kept: same manifest
    stream = stream.model_copy(
        update={
            "archive": stream.archive.model_copy(update={"location": "archive/impressions_before_changed"})
        }
    )

    def decided() -> PartitionsBefore:
        plan = ReadPlan.for_range(stream, *day_bounds(BEFORE, DAYS[-1]))
        files = window_files(archive_for(stream), plan.window)
        return partitions_before(
            join_env, spark, IMPRESSIONS_EVENTS, stream, files, plan, DAILY.start(DAYS[0])
        )

    assert decided() == PartitionsBefore(as_they_are={BEFORE: f"ingested in run {first_run}, unchanged"})
    late = copy / "2026" / "10" / "01" / "20" / "impressions-2026-10-01-20-late-0001.jsonl.gz"
    late.write_bytes(
        gzip.compress(b'{"event_id": "late-0", "event_time": "2026-10-01T20:10:00Z"}\n', mtime=0)
    )
    assert decided() == PartitionsBefore(ingest=[BEFORE])


def test_the_partitions_before_tag_is_read_strictly():
    """`backfill --dataset` writes the tag; a hand-written one that cannot be read fails the run, naming it."""
    tags = {PARTITIONS_BEFORE_TAG: partitions_before_tag({IMPRESSIONS: 1, "weather": 2, PLAYBACK: 0})}
    assert tags[PARTITIONS_BEFORE_TAG] == f"{IMPRESSIONS}=1,weather=2"
    told = run_settings(tags)
    assert [told.partitions_before_of(s) for s in (IMPRESSIONS, "weather", PLAYBACK)] == [1, 2, 0]
    with pytest.raises(RunSettingsError, match="`<stream>=<partitions>`"):
        run_settings({PARTITIONS_BEFORE_TAG: f"{IMPRESSIONS}=one"})
