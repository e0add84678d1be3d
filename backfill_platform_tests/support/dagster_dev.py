"""A real `dagster dev` (webserver + daemon) for end-to-end tests.

One webserver and daemon serve a team's project for the whole pytest session (the `dagster_dev` fixture in
conftest.py: `dagster_dev_project`, its workspace the project's code location), with its own Dagster
instance and a data directory of its own (`dagster_dev_data`: its runs commit there, never to the test
process's catalog) holding a copy of the generated archives. The project holds the demo's components and
the streams and datasets the UI tests need besides them: `playback_gap_ui`, a copy of the generated
playback archive with one ingestion hour deleted, and the dataset `views_gap_ui` on it;
`playback_submitted`/`views_submitted`, a whole copy, which test_cli_instance.py backfills through
`backfill-platform backfill --instance`.

What the tests ask the server (backfills, checks, materializations, the sensor, runs) is in
`dagster_graphql.py`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from backfill_platform import settings
from backfill_platform.operations import graphql
from backfill_platform.operations.graphql import GraphQLClient, SubmitError
from backfill_platform.orchestration.dagster_home import write_dagster_home
from backfill_platform.pipeline.run_settings import PARTITIONS_BEFORE_TAG
from backfill_platform_tests.support.processes import free_port, stop, wait_until

STARTUP_TIMEOUT_SECONDS = 180
# The backfill daemon loops every ~30 s: up to 30 s before the run starts and 30 s after it ended.

# The gap stream: the generated playback archive without the ingestion hour 2026-10-03 05:00, which
# days 2026-10-02 (through its lateness) and 2026-10-03 read, and 2026-10-04 does not.
GAP_STREAM = "playback_gap_ui"
GAP_DATASET = "views_gap_ui"
GAP_HOUR = ("2026", "10", "03", "05")
# The GraphQL the UI tests use, from the platform's client (one copy).

# A whole copy of the playback archive for `backfill --instance` (test_cli_instance.py).
SUBMIT_STREAM = "playback_submitted"
SUBMIT_DATASET = "views_submitted"

# The session's one successful backfill (the `views_backfill` fixture), shared by the GraphQL tests: the
# demo's assets, the join included. The join's first day reads impressions 2026-10-01 (its lookback), which
# the impressions' events step ingests in the same run (the tag `backfill --dataset` sets); the join's
# day after the range, 2026-10-05, is read only through the lookback and is not part of the backfill.
VIEWS_BACKFILL_DAYS = ["2026-10-02", "2026-10-03", "2026-10-04"]
VIEWS_BACKFILL_ASSETS = [
    ["raw", "playback_events"],
    ["shadow", "views_per_title__v2"],
    ["prod", "views_per_title_production"],
]
JOIN_BACKFILL_ASSETS = [
    ["raw", "impressions_events"],
    ["shadow", "attributed_plays__v2"],
    ["prod", "attributed_plays_production"],
]
JOIN_DAY_BEFORE, JOIN_DAY_AFTER = "2026-10-01", "2026-10-05"
VIEWS_BACKFILL_TAGS = {
    "backfill_platform/reason": "graphql test",
    "backfill_platform/ticket": "T-1",
    PARTITIONS_BEFORE_TAG: "impressions=1",
}


@dataclass
class DagsterDev:
    base_url: str
    log: Path
    process: subprocess.Popen
    dagster_home: Path
    data_dir: Path

    @property
    def graphql_url(self) -> str:
        return f"{self.base_url}/graphql"

    @property
    def client(self) -> GraphQLClient:
        return GraphQLClient(self.base_url)

    def log_tail(self, chars: int = 6000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else "(no log)"

    def graphql(self, query: str, variables: dict | None = None, timeout: float = 30) -> dict:
        """The answer's `data`; a GraphQL or transport error raises `SubmitError`."""
        return self.client.query(query, variables, timeout=timeout)

    def assert_running(self) -> None:
        if self.process.poll() is not None:
            pytest.fail(f"dagster dev exited with {self.process.returncode}:\n{self.log_tail()}")


def wait_until_loaded(dev: DagsterDev) -> None:
    """Until every code location of the workspace is LOADED (a load error, or the server exiting, fails at
    once)."""
    last = "no answer yet"

    def loaded() -> bool:
        nonlocal last
        dev.assert_running()
        try:
            done, errors = graphql.workspace_problems(GraphQLClient(dev.base_url, timeout=10))
        except SubmitError as error:
            last = str(error)
            return False
        if errors:
            pytest.fail(f"code location failed to load: {errors}\n{dev.log_tail()}")
        last = "code locations still loading"
        return done

    wait_until(
        loaded,
        timeout=STARTUP_TIMEOUT_SECONDS,
        every=1,
        what=lambda: f"dagster dev ready ({last}):\n{dev.log_tail()}",
    )


@contextmanager
def dagster_dev_server(
    data_dir: Path,
    dagster_home: Path,
    workspace: Path,
    extra_env: dict[str, str] | None = None,
) -> Iterator[DagsterDev]:
    """`dagster dev` on a free loopback port with its own DAGSTER_HOME (and `extra_env` on top of the
    test process's environment), serving `workspace` (a project's: `support/projects.write_workspace`);
    stopped (group) on exit."""
    write_dagster_home(dagster_home)
    port = free_port()
    env = {
        **os.environ,
        settings.DATA_DIR_ENV: str(data_dir),
        "DAGSTER_HOME": str(dagster_home),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "DAGSTER_DISABLE_TELEMETRY": "1",
        **(extra_env or {}),
    }
    log = dagster_home / "dagster_dev.log"
    command = [sys.executable, "-m", "dagster", "dev", "-w", str(workspace)]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*command, "-h", "127.0.0.1", "-p", str(port)],
            cwd=workspace.parent,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    dev = DagsterDev(
        base_url=f"http://127.0.0.1:{port}",
        log=log,
        process=process,
        dagster_home=dagster_home,
        data_dir=data_dir,
    )
    try:
        wait_until_loaded(dev)
        yield dev
    finally:
        stop(process)
