"""Production and its records never disagree: the ledger's promotion facts are derived from production's
snapshot properties, so a process that dies between the production commit and the ledger write is
repaired by the next promotion, revert or adoption, or by `backfill-platform ledger`."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from backfill_platform import settings
from backfill_platform.components.registry import Project
from backfill_platform.devtools.demo.legacy_table import write_legacy_table
from backfill_platform.lakehouse.resources import open_catalog
from backfill_platform.lakehouse.snapshots import current_snapshot_id
from backfill_platform.operations.ledger_view import latest, ledger_rows
from backfill_platform.orchestration.dagster_home import write_dagster_home
from backfill_platform.pipeline.ledger.latest import LATEST_ORDER, latest_per
from backfill_platform.pipeline.ledger.ledger import (
    LedgerRow,
    append,
    latest_shadow_rows,
    ledger,
    ledger_table,
)
from backfill_platform.pipeline.ledger.reconcile import reconcile_ledger
from backfill_platform.pipeline.names import production_table
from backfill_platform.pipeline.promotion import adopt as adopt_module
from backfill_platform.pipeline.promotion import promote as promote_module
from backfill_platform.pipeline.promotion import revert as revert_module
from backfill_platform.pipeline.promotion.adopt import adopt
from backfill_platform.pipeline.promotion.promote import promote
from backfill_platform.pipeline.promotion.revert import revert_promotion
from backfill_platform.pipeline.shadow.assets import build_shadow_asset
from backfill_platform.pipeline.tables.dataset_tables import read_range
from backfill_platform.pipeline.validation.fingerprints import Fingerprint, dataset_table_fingerprints
from backfill_platform_tests.support.datasets import dataset, production, renamed_dataset_data, run
from backfill_platform_tests.support.lakehouse import lakehouse_session, own_data_dir
from backfill_platform_tests.support.projects import load_project, write_project
from backfill_platform_tests.support.session import D1, D2, D3

pytestmark = pytest.mark.long_running(minutes=2)


@pytest.fixture(scope="module")
def ready(events_materialized):
    return events_materialized


def facts(spark, name: str, version: str) -> dict[str, tuple]:
    """Day → (promoted snapshot, promotion run, reverted snapshot) of the latest row of each day."""
    rows = ledger(spark, name).where(F.col("version") == version).orderBy(*LATEST_ORDER).collect()
    return {
        r["partition_date"].isoformat(): (
            r["promoted_snapshot_id"],
            r["promotion_run_id"],
            r["reverted_snapshot_id"],
        )
        for r in rows
    }


def no_ledger_write(*_args, **_kwargs):
    """Stands in for the ledger write of a process that died right after its production commit."""
    return None


def test_the_next_promotion_records_one_whose_ledger_write_was_lost(
    ready, spark, spark_resource, playback, monkeypatch
):
    spec = dataset("views_truth_next")
    assert run(spark_resource, [build_shadow_asset(spec, [playback], "v2")], D1, D2).success
    monkeypatch.setattr(promote_module, "reconcile_ledger", no_ledger_write)
    lost = promote(spark, spec, [playback], D1, D2, {"dagster.run-id": "lost-write"})
    assert facts(spark, spec.name, "v2")[D1.isoformat()] == (None, None, None)  # production says otherwise

    monkeypatch.undo()
    following = promote(spark, spec, [playback], D2, D3, {"dagster.run-id": "next-run"})
    assert facts(spark, spec.name, "v2") == {
        D1.isoformat(): (lost.snapshot_id, "lost-write", None),
        D2.isoformat(): (following.snapshot_id, "next-run", None),
    }
    # Already consistent: nothing to do, and no commit to the ledger.
    before = current_snapshot_id(spark, ledger_table(spark))
    assert not reconcile_ledger(spark, spec).changed
    assert current_snapshot_id(spark, ledger_table(spark)) == before


def test_lost_adopt_and_revert_records_are_rebuilt_from_production(
    ready, spark, spark_resource, playback, monkeypatch
):
    spec = dataset("views_truth_adopt")
    legacy = write_legacy_table(spark, spec, playback, "v1", D1, D3)
    monkeypatch.setattr(adopt_module, "reconcile_ledger", no_ledger_write)
    adopted = adopt(spark, spec, legacy, D1, D3, reason="legacy", by="tester")
    assert ledger(spark, spec.name).where(F.col("adopted")).count() == 0

    repaired = reconcile_ledger(spark, spec)
    assert (
        sorted(d for _, d, _ in repaired.inserted) == [D1.isoformat(), D2.isoformat()]
        and not repaired.updated
    )
    rows = ledger(spark, spec.name).where(F.col("adopted")).collect()
    production = dataset_table_fingerprints(
        read_range(spark, production_table(spark, spec), spec, D1, D3, adopted), spec, [D1, D2]
    )
    assert {
        r["partition_date"].isoformat(): Fingerprint.recorded(r.asDict(), "shadow") for r in rows
    } == production
    assert {(r["run_id"], r["promoted_snapshot_id"], r["promotion_run_id"], r["reason"]) for r in rows} == {
        (f"adopt-{adopted}", adopted, "tester", "legacy")
    }

    assert run(spark_resource, [build_shadow_asset(spec, [playback], "v2")], D1, D2).success
    promotion = promote(spark, spec, [playback], D1, D3, {"dagster.run-id": "promoted"})
    monkeypatch.setattr(revert_module, "reconcile_ledger", no_ledger_write)
    reverted = revert_promotion(spark, spec, promotion.snapshot_id, reason="lost revert record")
    assert set(facts(spark, spec.name, "v2").values()) == {(promotion.snapshot_id, "promoted", None)}

    repaired = reconcile_ledger(spark, spec)
    assert len(repaired.updated) == 2 and not repaired.inserted
    assert set(facts(spark, spec.name, "v2").values()) == {
        (promotion.snapshot_id, "promoted", reverted.snapshot_id)
    }
    assert not reconcile_ledger(spark, spec).changed


def test_the_revert_job_materializes_each_restored_day(
    ready, spark, spark_resource, playback, tmp_path, monkeypatch
):
    from backfill_platform.pipeline.promotion.jobs import revert_promotion_job

    # The job looks the dataset up by name among the project's specs: a component of the test's own.
    name = "views_truth_job"
    specs = load_project(write_project(tmp_path, [renamed_dataset_data(name)], demo=True))
    spec = specs.datasets[name]
    assert run(spark_resource, [build_shadow_asset(spec, [playback], "v2")], D1, D2).success
    promotion = promote(spark, spec, [playback], D1, D3)
    result = revert_promotion_job.execute_in_process(
        run_config={"ops": {"revert_promotion_op": {"config": {"dataset": name, "reason": "job"}}}},
        resources={"spark": spark_resource, "specs": specs},
    )
    assert result.success
    materializations = result.asset_materializations_for_node("revert_promotion_op")
    assert sorted(m.partition for m in materializations) == [D1.isoformat(), D2.isoformat()]
    assert {tuple(m.asset_key.path) for m in materializations} == {("prod", f"{name}_production")}
    for m in materializations:
        assert m.metadata["reverts_snapshot_id"].value == str(promotion.snapshot_id)
        assert m.metadata["rows"].value == 0  # production was empty before the promotion
    assert {v[2] for v in facts(spark, name, "v2").values()} == {
        current_snapshot_id(spark, production_table(spark, spec))
    }


# Run in a process of its own, on a lakehouse of its own: derive the events and validate the shadow, then
# promote, dying by SIGKILL right after the production commit, before any ledger write (the fault is
# injected by wrapping the commit itself).
KILLED_PROMOTION = """
import os, signal, sys
from datetime import date
from dagster import materialize
from backfill_platform.pipeline.events.assets import build_events_asset
from backfill_platform.lakehouse.resources import catalog_from_env, spark_from_env
from backfill_platform.pipeline.promotion import promote as promotion
from backfill_platform.pipeline.shadow.assets import build_shadow_asset
from backfill_platform.components.registry import project_specs

name, first, end = sys.argv[1], date.fromisoformat(sys.argv[2]), date.fromisoformat(sys.argv[3])
specs = project_specs()  # the working directory's project
spec, stream = specs.datasets[name], specs.streams["playback"]
resource = spark_from_env(catalog_from_env())
tags = {"dagster/asset_partition_range_start": sys.argv[2], "dagster/asset_partition_range_end": sys.argv[4]}
assets = [build_events_asset(stream), build_shadow_asset(spec, [stream], "v2")]
assert materialize(assets, resources={"spark": resource}, tags=tags).success
commit = promotion.replace_range

def commit_then_die(*args, **kwargs):
    commit(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)

promotion.replace_range = commit_then_die
promotion.promote(resource.spark_session, spec, [stream], first, end, {"dagster.run-id": "killed-run"})
raise SystemExit("the promotion should have been killed after its commit")
"""


def subprocess_env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, settings.DATA_DIR_ENV: str(data_dir)}
    env.update({"SPARK_LOCAL_IP": "127.0.0.1", "DAGSTER_DISABLE_TELEMETRY": "1", **extra})
    env.pop("DAGSTER_HOME", None)
    return env


def run_python(env: dict[str, str], project: Project, *args: str):
    """Python run from the project's folder: the CLI and `project_specs()` read that project, as `dg` does."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=project.root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def fresh(spark, data_dir: Path, *identifiers: str):
    """A new session on `data_dir`'s lakehouse (new catalog connections): what other processes committed."""
    reader = lakehouse_session(spark, data_dir)
    for identifier in identifiers:
        reader.sql(f"REFRESH TABLE {identifier}")
    return reader


def fresh_facts(spark, data_dir: Path, name: str) -> dict[str, tuple]:
    reader = fresh(spark, data_dir, ledger_table(spark))
    rows = (
        reader.table(ledger_table(spark))
        .where((F.col("dataset") == name) & (F.col("version") == "v2"))
        .collect()
    )
    return {
        r["partition_date"].isoformat(): (
            r["promoted_snapshot_id"],
            r["promotion_run_id"],
            r["reverted_snapshot_id"],
        )
        for r in rows
    }


def test_every_reader_takes_the_same_row_of_a_day_whose_runs_tie_on_recorded_at(spark):
    """The gate (Spark rows picked in Python), `status` (PyIceberg) and the promotion report (a Spark
    window) agree on a tie of `recorded_at`: the greater run id is the latest."""
    name, at = "views_truth_tie", datetime(2026, 11, 2, 9, 30, tzinfo=UTC)
    for run_id, passed in (("run-a", True), ("run-b", False), ("run-0", True)):  # one commit each
        row = LedgerRow(
            dataset=name, version="v2", partition_date=D1, run_id=run_id, recorded_at=at, stream="playback",
            checks_passed=passed,
        )  # fmt: skip
        append(spark, [row], LedgerRow)
    rows = ledger(spark, name).collect()
    assert len(rows) == 3 and len({r["recorded_at"] for r in rows}) == 1  # tied, as read back

    gate = latest_shadow_rows(spark, name, "v2", [D1])[D1.isoformat()]
    status = latest(ledger_rows(open_catalog(), name))[D1.isoformat()]
    [report] = latest_per(ledger(spark, name), "partition_date").collect()
    assert gate["run_id"] == status["run_id"] == report["run_id"] == "run-b"
    assert gate["checks_passed"] is status["checks_passed"] is report["checks_passed"] is False


@pytest.mark.other_writers
def test_a_promotion_killed_after_its_commit_is_recorded_by_the_ledger_command(
    spark, playback_archive, tmp_path
):
    from dagster import AssetKey, DagsterInstance

    from backfill_platform.lakehouse.tables import snapshot_summary

    name = "views_truth_killed"
    days = [D1.isoformat(), D2.isoformat()]
    data = own_data_dir(tmp_path / "data", playback_archive)  # the subprocesses commit here
    env = subprocess_env(data)
    project = write_project(tmp_path, [renamed_dataset_data(name)], demo=True)
    killed = run_python(env, project, "-c", KILLED_PROMOTION, name, days[0], D3.isoformat(), days[1])
    assert killed.returncode == -9, killed.stderr[-3000:]

    table = production(name).table
    reader = fresh(spark, data, table)
    promoted = current_snapshot_id(reader, table)
    summary = snapshot_summary(reader, table, promoted)
    assert summary["backfill_platform.action"] == "promote" and summary["dagster.run-id"] == "killed-run"
    assert fresh_facts(spark, data, name) == dict.fromkeys(
        days, (None, None, None)
    )  # production and ledger disagree

    ledger_command = run_python(env, project, "-m", "backfill_platform.cli", "ledger", "--dataset", name)
    assert ledger_command.returncode == 0, ledger_command.stderr[-3000:]
    assert "ledger repaired from production's history: 2 row(s) corrected" in ledger_command.stdout
    assert fresh_facts(spark, data, name) == dict.fromkeys(days, (promoted, "killed-run", None))

    # The revert command tells the Dagster instance what production holds now, day by day.
    home = tmp_path / "dagster_home"
    home.mkdir()
    write_dagster_home(home)
    revert_env = {**env, "DAGSTER_HOME": str(home)}
    reverted = run_python(
        revert_env, project, "-m", "backfill_platform.cli", "revert", "--dataset", name, "--reason", "t"
    )
    assert reverted.returncode == 0, reverted.stderr[-3000:]
    assert "reported 2 day(s) of production to the Dagster instance" in reverted.stdout
    revert_snapshot = current_snapshot_id(fresh(spark, data, table), table)
    assert fresh_facts(spark, data, name) == dict.fromkeys(days, (promoted, "killed-run", revert_snapshot))
    with DagsterInstance.from_config(str(home)) as instance:
        records = instance.fetch_materializations(AssetKey(["prod", f"{name}_production"]), limit=10).records
    events = {r.partition_key: r.asset_materialization for r in records}
    assert sorted(events) == days
    assert all(e.metadata["snapshot_id"].value == str(revert_snapshot) for e in events.values())

    # Consistent now: the ledger command repairs nothing.
    again = run_python(env, project, "-m", "backfill_platform.cli", "ledger", "--dataset", name)
    assert again.returncode == 0 and "repaired" not in again.stdout, again.stderr[-3000:]
