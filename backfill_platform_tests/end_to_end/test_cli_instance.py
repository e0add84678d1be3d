"""`backfill-platform backfill --instance URL`, the data directory's own Dagster instance, daily wording.

The submission goes to the session's real `dagster dev` (webserver + daemon, the `dagster_dev` fixture)
for its own copy of the playback stream (`playback_submitted`, dataset `views_submitted`), so the UI
tests' streams and their assertions are untouched. The CLI runs as a subprocess with the server's data
directory (its own lakehouse) and spec folder but no DAGSTER_HOME: everything it reports comes over
GraphQL and from the ledger (PyIceberg). What is asserted is read back: the backfill and its run through
GraphQL, the ledger's promotions and production's rows per day through PyIceberg.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pyarrow.compute as pc
import pytest
import yaml

from backfill_platform import settings
from backfill_platform.components.registry import Project
from backfill_platform.operations import submit
from backfill_platform.operations.explain import describe
from backfill_platform.pipeline.shadow.checks import CHECKSUMS, ROW_COUNTS
from backfill_platform_tests.support.dagster_dev import SUBMIT_DATASET, SUBMIT_STREAM
from backfill_platform_tests.support.lakehouse import catalog_of
from backfill_platform_tests.support.processes import free_port
from backfill_platform_tests.support.projects import write_project
from backfill_platform_tests.support.session import REPO_ROOT
from backfill_platform_tests.support.streams import stream_copy_specs

pytestmark = pytest.mark.other_writers

CLI = Path(sys.executable).parent / "backfill-platform"
DAYS = ["2026-10-02", "2026-10-03"]
END = "2026-10-04"
REASON, TICKET = "instance test", "T-1"


def cli_env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}
    env.update(
        {
            settings.DATA_DIR_ENV: str(data_dir),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "DAGSTER_DISABLE_TELEMETRY": "1",
            "TZ": "UTC",
        }
    )
    return env


def run_cli(
    env: dict[str, str], project: Project, *args: str, timeout: float = 600
) -> subprocess.CompletedProcess:
    """`backfill-platform` run from the project's folder, as `dg` is: the CLI reads that project."""
    result = subprocess.run(
        [str(CLI), *args], cwd=project.root, env=env, capture_output=True, text=True, timeout=timeout
    )
    print(result.stdout[-6000:], result.stderr[-4000:])  # shown when a test fails
    return result


def report_row(output: str, day: str) -> list[str]:
    for line in output.splitlines():
        if line.startswith("│") and f"│ {day} " in line:
            return [cell.strip() for cell in line.strip("│").split("│")]
    raise AssertionError(f"no report row for {day}")


def test_backfill_submitted_to_the_webserver(dagster_dev, dagster_dev_project: Project):
    env = cli_env(dagster_dev.data_dir)
    result = run_cli(
        env, dagster_dev_project, "backfill", "--dataset", SUBMIT_DATASET, "--start", DAYS[0], "--end", END,
        "--instance", dagster_dev.base_url, "--reason", REASON, "--ticket", TICKET,
    )  # fmt: skip
    assert result.returncode == 0, dagster_dev.log_tail()
    out = result.stdout

    # Progress was followed from the backfill's states (plain lines: stdout is not a terminal).
    assert "COMPLETED_SUCCESS: runs 1/1 done" in out
    backfill_id = re.search(r"\(backfill (\w+), run ([\w-]+)\)", out)
    assert backfill_id, out
    backfill_id, run_id = backfill_id.groups()

    # The backfill as the webserver knows it: one successful run, tagged with reason, ticket and policy.
    backfill = submit.backfill_state(dagster_dev.client, backfill_id)
    assert backfill["status"] == "COMPLETED_SUCCESS"
    assert backfill["partitionNames"] == DAYS
    backfill_tags = {t["key"]: t["value"] for t in backfill["tags"]}
    assert backfill_tags["backfill_platform/reason"] == REASON
    assert backfill_tags["backfill_platform/ticket"] == TICKET
    [run] = backfill["runs"]
    assert (run["runId"], run["status"]) == (run_id, "SUCCESS")
    run_tags = {t["key"]: t["value"] for t in run["tags"]}
    assert run_tags["dagster/backfill"] == backfill_id
    assert (run_tags["backfill_platform/reason"], run_tags["backfill_platform/ticket"]) == (REASON, TICKET)
    assert run_tags["backfill_platform/promotion_policy"] == "all_or_nothing"
    statuses = submit.asset_statuses(backfill)
    assert set(statuses) == {
        f"raw/{SUBMIT_STREAM}_events",
        f"shadow/{SUBMIT_DATASET}__v2",
        f"prod/{SUBMIT_DATASET}_production",
    }
    assert all(s["numPartitionsMaterialized"] == len(DAYS) for s in statuses.values()), statuses

    # The ledger (PyIceberg, on the server's lakehouse): each day promoted by that run; production holds
    # the shadow's rows.
    # The ledger (PyIceberg): each day promoted by that run; production holds the shadow's rows.
    from backfill_platform.operations.ledger_view import in_production, ledger_rows

    catalog = catalog_of(dagster_dev.data_dir).load()
    promoted = {str(d): r for d, r in in_production(ledger_rows(catalog, SUBMIT_DATASET)).items()}
    production = catalog.load_table(("prod", SUBMIT_DATASET)).scan().to_arrow()
    for day in DAYS:
        row = promoted[day]
        assert row["promotion_run_id"] == run_id and row["version"] == "v2", row
        rows = pc.sum(pc.equal(pc.cast(production["event_date"], "string"), day)).as_py()
        assert rows == row["shadow_rows"] > 0, (day, rows, row)
        # The per-day report printed what the ledger holds.
        cells = report_row(out, day)
        assert cells[-1] == "promoted" and cells[6] == "passed", cells
        assert cells[5] == f"{row['shadow_rows']:,}", cells
    assert f"promoted {len(DAYS)} day(s)" in out


def test_instance_errors_are_clear(dagster_dev, dagster_dev_project: Project, dagster_dev_specs, tmp_path):
    # Nothing listens: the URL is named, no traceback.
    data_dir = dagster_dev.data_dir
    env = cli_env(data_dir)
    dead = f"http://127.0.0.1:{free_port()}"
    result = run_cli(
        env,
        dagster_dev_project,
        "backfill",
        "--dataset",
        SUBMIT_DATASET,
        "--start",
        DAYS[0],
        "--end",
        END,
        "--instance",
        dead,
    )
    assert result.returncode == 1
    assert f"no Dagster webserver answers at {dead}" in result.stderr
    assert "Traceback" not in result.stderr

    # A dataset this process knows and the webserver does not load: its missing assets are named.
    # (This process's project: the server's components and one more stream and dataset.)
    extra = stream_copy_specs(data_dir, "playback_not_served", "views_not_served", drop_hours=[])
    project = write_project(tmp_path, [*dagster_dev_specs, *extra], demo=True)
    result = run_cli(
        env, project, "backfill", "--dataset", "views_not_served", "--start", DAYS[0], "--end", END,
        "--instance", dagster_dev.base_url,
    )  # fmt: skip
    assert result.returncode == 1
    assert "defines raw/playback_not_served_events, shadow/views_not_served__v2" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_data_directory_holds_the_dagster_instance(tmp_path: Path, monkeypatch):
    """Without DAGSTER_HOME, runs are stored under <BACKFILL_PLATFORM_DATA>/dagster (CLI and make)."""
    from dagster import DagsterInstance, asset, materialize

    from backfill_platform.orchestration.instance import instance_from_env

    data = tmp_path / "lake"
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.setenv(settings.DATA_DIR_ENV, str(data))

    @asset
    def probe() -> int:
        return 1

    with instance_from_env() as instance:
        run_id = materialize([probe], instance=instance).run_id
    home = data / "dagster"
    config = yaml.safe_load((home / "dagster.yaml").read_text())
    assert config["storage"]["sqlite"]["base_dir"] == str(home.resolve())
    assert config["run_launcher"]["class"] == "WorkerCheckingRunLauncher"  # the repository's, moved
    assert (home / "history" / "runs.db").exists()
    with DagsterInstance.from_config(str(home)) as reopened:
        assert reopened.get_run_by_id(run_id) is not None

    # make: the same DAGSTER_HOME and file; one the user set is kept; by default the repository root.
    show = ["make", "-s", "--no-print-directory", "--eval=show-home: ; @echo $(DAGSTER_HOME)", "show-home"]
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}

    def make_home(**extra: str) -> str:
        run = subprocess.run(show, cwd=REPO_ROOT, env={**env, **extra}, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        return run.stdout.strip()

    written = (home / "dagster.yaml").read_text()
    assert Path(make_home(**{settings.DATA_DIR_ENV: str(data)})).resolve() == home.resolve()
    assert yaml.safe_load((home / "dagster.yaml").read_text()) == yaml.safe_load(written)
    assert make_home(**{settings.DATA_DIR_ENV: str(data), "DAGSTER_HOME": str(tmp_path)}) == str(tmp_path)
    env.pop(settings.DATA_DIR_ENV, None)
    assert make_home() == str(REPO_ROOT)


def test_failures_name_the_bucket_of_the_dataset():
    hourly = {"buckets_failed": 2, "buckets_checked": 24, "rows": 90, "expected_rows": 100}
    assert describe(ROW_COUNTS, hourly) == "2 of 24 hour buckets wrong: 90 rows, the events imply 100"
    daily = {**hourly, "buckets_failed": 1, "buckets_checked": 1}
    assert describe(ROW_COUNTS, daily, bucket="day") == (
        "the day's row count is wrong: 90 rows, the events imply 100"
    )
    assert "hour" not in describe(CHECKSUMS, daily, bucket="day")
    assert describe(CHECKSUMS, hourly, bucket="hour").startswith("2 of 24 hour buckets' sums differ")
