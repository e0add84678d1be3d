"""A backfill launched through the webserver's GraphQL API, as the UI does, end to end.

A real `dagster dev` (webserver + daemon) serves the repository's workspace with its own Dagster
instance. The test launches a partition backfill of events → shadow v2 → production of
`views_per_title` for two days with `launchPartitionBackfill`, polls `partitionBackfillOrError`
until the daemon marks it done, checks that the whole range ran as one run, then reads the ledger
and the tables back with this process's Spark session: the range was re-derived, checked and
promoted in one production commit that names the backfill, its reason and its ticket.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from backfill_platform import settings
from backfill_platform.promotion.promote import ACTION, RANGE_END, RANGE_START
from backfill_platform_tests.test_cli_backfill import write_dagster_home

pytestmark = pytest.mark.other_writers

REPO_ROOT = Path(__file__).resolve().parents[1]
DAGSTER_CLI = REPO_ROOT / ".venv" / "bin" / "dagster"
DAYS = ["2026-10-02", "2026-10-03"]
RANGE_END_EXCLUSIVE = "2026-10-04"
ASSET_PATHS = [["raw", "playback_events"], ["shadow", "views_per_title__v2"], ["prod", "views_per_title"]]
REASON = "graphql test"
TICKET = "T-1"
LEDGER = "lake.platform.ledger"
SHADOW = "lake.shadow.views_per_title__v2"
PRODUCTION = "lake.prod.views_per_title"
STARTUP_TIMEOUT_SECONDS = 180
BACKFILL_TIMEOUT_SECONDS = 480
SHUTDOWN_TIMEOUT_SECONDS = 30

WORKSPACE_QUERY = """
query Workspace {
  workspaceOrError {
    __typename
    ... on Workspace {
      locationEntries {
        name
        loadStatus
        locationOrLoadError {
          __typename
          ... on PythonError { message stack }
        }
      }
    }
    ... on PythonError { message stack }
  }
}
"""

LAUNCH_MUTATION = """
mutation Launch($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId launchedRunIds }
    ... on Error { message }
    ... on PythonError { stack }
  }
}
"""

BACKFILL_QUERY = """
query Backfill($backfillId: String!) {
  partitionBackfillOrError(backfillId: $backfillId) {
    __typename
    ... on PartitionBackfill {
      id
      status
      isAssetBackfill
      title
      partitionNames
      error { message stack }
      runs {
        runId
        status
        tags { key value }
      }
    }
    ... on Error { message }
    ... on PythonError { stack }
  }
}
"""


@dataclass
class DagsterDev:
    url: str
    log: Path
    process: subprocess.Popen

    def log_tail(self, chars: int = 6000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else "(no log)"

    def graphql(self, query: str, variables: dict | None = None, timeout: float = 30) -> dict:
        body = json.dumps({"query": query, "variables": variables or {}}).encode()
        request = urllib.request.Request(self.url, data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            payload = json.loads(response.read())
        assert not payload.get("errors"), payload["errors"]
        return payload["data"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def stop(process: subprocess.Popen) -> None:
    """SIGTERM the whole process group (webserver, daemon, code server, runs), then SIGKILL."""
    if process.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, SHUTDOWN_TIMEOUT_SECONDS), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def wait_until_loaded(dev: DagsterDev) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
    last = "no answer yet"
    while time.monotonic() < deadline:
        if dev.process.poll() is not None:
            pytest.fail(f"dagster dev exited with {dev.process.returncode}:\n{dev.log_tail()}")
        try:
            workspace = dev.graphql(WORKSPACE_QUERY, timeout=10)["workspaceOrError"]
        except (urllib.error.URLError, ConnectionError, TimeoutError, AssertionError) as error:
            last = repr(error)
        else:
            entries = workspace.get("locationEntries") or []
            last = json.dumps(workspace)[:2000]
            if entries and all(e["loadStatus"] == "LOADED" for e in entries):
                errors = [e for e in entries if e["locationOrLoadError"]["__typename"] == "PythonError"]
                if errors:
                    pytest.fail(f"code location failed to load: {errors}\n{dev.log_tail()}")
                return
        time.sleep(1)
    pytest.fail(f"dagster dev not ready after {STARTUP_TIMEOUT_SECONDS}s ({last}):\n{dev.log_tail()}")


@pytest.fixture(scope="module")
def dagster_dev(truth, data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DagsterDev]:
    """`dagster dev` on a free loopback port, its own DAGSTER_HOME, the session's data directory."""
    dagster_home = tmp_path_factory.mktemp("dagster_dev_home")
    write_dagster_home(dagster_home)
    port = free_port()
    env = {
        **os.environ,
        settings.DATA_DIR_ENV: str(data_dir),
        "DAGSTER_HOME": str(dagster_home),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "DAGSTER_DISABLE_TELEMETRY": "1",
    }
    log = dagster_home / "dagster_dev.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                str(DAGSTER_CLI),
                "dev",
                "-w",
                str(REPO_ROOT / "workspace.yaml"),
                "-h",
                "127.0.0.1",
                "-p",
                str(port),
            ],
            cwd=REPO_ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    dev = DagsterDev(url=f"http://127.0.0.1:{port}/graphql", log=log, process=process)
    try:
        wait_until_loaded(dev)
        yield dev
    finally:
        stop(process)


@dataclass
class Backfill:
    backfill_id: str
    status: str
    runs: list[dict]


@pytest.fixture(scope="module")
def graphql_backfill(dagster_dev: DagsterDev) -> Backfill:
    """Launch the backfill as the UI does and wait for the daemon to finish it."""
    params = {
        "assetSelection": [{"path": path} for path in ASSET_PATHS],
        "partitionNames": DAYS,
        "tags": [
            {"key": "backfill_platform/reason", "value": REASON},
            {"key": "backfill_platform/ticket", "value": TICKET},
        ],
        "title": "views_per_title v2, 2 days, through GraphQL",
    }
    launched = dagster_dev.graphql(LAUNCH_MUTATION, {"params": params})["launchPartitionBackfill"]
    assert launched["__typename"] == "LaunchBackfillSuccess", launched
    backfill_id = launched["backfillId"]

    deadline = time.monotonic() + BACKFILL_TIMEOUT_SECONDS
    backfill: dict = {}
    while time.monotonic() < deadline:
        backfill = dagster_dev.graphql(BACKFILL_QUERY, {"backfillId": backfill_id})[
            "partitionBackfillOrError"
        ]
        assert backfill["__typename"] == "PartitionBackfill", backfill
        if backfill["status"] == "COMPLETED_SUCCESS":
            return Backfill(backfill_id, backfill["status"], backfill["runs"])
        if backfill["status"] in {"COMPLETED_FAILED", "FAILED", "CANCELED", "CANCELING", "FAILING"}:
            pytest.fail(f"backfill {backfill_id} ended {backfill}\n{dagster_dev.log_tail()}")
        if dagster_dev.process.poll() is not None:
            pytest.fail(
                f"dagster dev exited with {dagster_dev.process.returncode}:\n{dagster_dev.log_tail()}"
            )
        time.sleep(3)
    pytest.fail(
        f"backfill {backfill_id} not done after {BACKFILL_TIMEOUT_SECONDS}s: {backfill}\n{dagster_dev.log_tail()}"
    )


def test_graphql_backfill_rederives_and_promotes_the_range(graphql_backfill: Backfill, truth, spark):
    backfill_id = graphql_backfill.backfill_id

    # The whole range ran as one successful run (BackfillPolicy.single_run()), tagged by the backfill.
    assert len(graphql_backfill.runs) == 1, graphql_backfill.runs
    run = graphql_backfill.runs[0]
    assert run["status"] == "SUCCESS", run
    tags = {tag["key"]: tag["value"] for tag in run["tags"]}
    assert tags["dagster/backfill"] == backfill_id
    assert tags["backfill_platform/reason"] == REASON
    assert tags["backfill_platform/ticket"] == TICKET
    assert (tags["dagster/asset_partition_range_start"], tags["dagster/asset_partition_range_end"]) == (
        DAYS[0],
        DAYS[-1],
    )

    # This long-lived test session was once seen to keep reading the SQLite catalog as it was before
    # the webserver's run committed (not reproduced in isolation); a new session has its own Iceberg
    # catalog instance and JDBC connection, so the assertions below cannot read stale metadata.
    spark = spark.newSession()
    for identifier in (LEDGER, SHADOW, PRODUCTION):
        spark.sql(f"REFRESH TABLE {identifier}")

    # The production commit that promoted the range names the backfill, its reason and its ticket.
    promotions = spark.sql(
        f"SELECT snapshot_id, summary FROM {PRODUCTION}.snapshots "
        f"WHERE summary['dagster.backfill-id'] = '{backfill_id}'"
    ).collect()
    assert len(promotions) == 1, promotions
    promotion_snapshot, summary = promotions[0]["snapshot_id"], promotions[0]["summary"]
    assert summary[ACTION] == "promote"
    assert summary["dagster.run-id"] == run["runId"]
    assert summary["reason"] == REASON
    assert summary["ticket"] == TICKET
    assert (summary[RANGE_START], summary[RANGE_END]) == (DAYS[0], RANGE_END_EXCLUSIVE)

    # The ledger holds one checked, promoted row per day of the range, with the archive's counts.
    rows = (
        spark.table(LEDGER)
        .where(
            (F.col("dataset") == "views_per_title")
            & (F.col("version") == "v2")
            & (F.col("backfill_id") == backfill_id)
        )
        .collect()
    )
    assert sorted(row["partition"].isoformat() for row in rows) == DAYS, rows
    for row in rows:
        day = row["partition"].isoformat()
        assert row["run_id"] == run["runId"], day
        assert row["checks_passed"] is True, (day, row["failed_checks"])
        assert row["records"] == truth["partitions"][day]["records"], day
        assert row["reason"] == REASON, day
        assert row["promoted_snapshot_id"] == promotion_snapshot, day
        assert row["promotion_run_id"] == run["runId"], day

    # Production, as promoted, equals the shadow v2 snapshot it was promoted from, row for row.
    shadow_snapshot = int(summary["backfill_platform.shadow-snapshot-id"])
    production = spark.sql(f"SELECT * FROM {PRODUCTION} VERSION AS OF {promotion_snapshot}")
    shadow = spark.sql(f"SELECT * FROM {SHADOW} VERSION AS OF {shadow_snapshot}")
    in_days = F.col("event_date").isin(DAYS)
    production, shadow = production.where(in_days), shadow.where(in_days).select(*production.columns)
    assert production.count() > 0
    assert production.count() == shadow.count()
    assert production.exceptAll(shadow).count() == 0
    assert shadow.exceptAll(production).count() == 0
