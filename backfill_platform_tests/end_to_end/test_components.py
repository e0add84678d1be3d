"""A team's own project, as a new user builds it: a dg project outside this package, with a stream, a
daily dataset and its transform module beside its spec, declared as components.

`backfill-platform init` writes the project and `dg scaffold defs` valid starting points; `dg check defs` and `dg list defs` accept the project;
`dg launch` backfills three days in one run; production is read back with PyIceberg and compared with
the generator's truth (events written per day, starts per day), computed independently of the platform.
The `backfill-platform` CLI, run from the project's folder with no variable, backfills and reports the
project's own dataset and knows none of the demo's.
A misspelt attribute is reported by `dg check defs` with the file and the line.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from backfill_platform import settings
from backfill_platform.components.project import init_project
from backfill_platform.components.registry import demo_spec_data
from backfill_platform.orchestration.dagster_home import write_dagster_home
from backfill_platform_tests.support.cli import table_row
from backfill_platform_tests.support.lakehouse import catalog_of
from backfill_platform_tests.support.session import REPO_ROOT
from backfill_platform_tests.support.specs import write_component

DG = REPO_ROOT / ".venv" / "bin" / "dg"
DAYS = ["2026-10-01", "2026-10-02", "2026-10-03"]
DG_TIMEOUT_SECONDS = 600

TRANSFORM = '''
from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def daily_activity(events: DataFrame) -> DataFrame:
    """Events per day and event type."""
    return events.groupBy(F.to_date("event_time").alias("event_date"), "event_type").agg(
        F.count(F.lit(1)).alias("events")
    )
'''


def daily_activity_spec() -> dict:
    return {
        "name": "daily_activity",
        "description": "Events per day and event type.",
        "source_stream": "team_playback",
        "bucket": "day",
        "partition_column": "event_date",
        "key_columns": ["event_date", "event_type"],
        "columns": {"event_date": "date", "event_type": "string", "events": "long"},
        "versions": {"v1": {"transform": "transform:daily_activity"}},
        "active_version": "v1",
        "expected_rows": {"expression": "count(DISTINCT event_type)"},
        "reconciliation": [{"column": "events", "expression": "count(1)"}],
    }


class TeamProject:
    """A project as `backfill-platform init` writes it, with its own data directory and Dagster home."""

    def __init__(self, parent: Path, data: Path, archive_root: Path) -> None:
        self.root, self.data, self.home = parent / "team_views", data, parent / "dagster_home"
        self.archive_root = archive_root
        init_project(self.root)
        self.defs = self.root / "team_views" / "defs"
        self.home.mkdir()
        write_dagster_home(self.home)

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env.update(
            {
                "PATH": f"{DG.parent}{os.pathsep}{env['PATH']}",
                "VIRTUAL_ENV": str(DG.parent.parent),
                "DAGSTER_HOME": str(self.home),
                settings.DATA_DIR_ENV: str(self.data),
                # The operator allows the session's archive, read in place (a spec cannot).
                settings.ARCHIVE_ROOTS_ENV: str(self.archive_root),
                "SPARK_LOCAL_IP": "127.0.0.1",
                "DAGSTER_DISABLE_TELEMETRY": "1",
            }
        )
        return env

    def dg(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run(
            [str(DG), *args],
            cwd=self.root,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=DG_TIMEOUT_SECONDS,
        )
        if check:
            assert result.returncode == 0, (
                f"dg {' '.join(args)}:\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
            )
        return result

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        """`backfill-platform` run from the project's folder, as `dg` is: it reads that project."""
        result = subprocess.run(
            [str(DG.parent / "backfill-platform"), *args],
            cwd=self.root,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=DG_TIMEOUT_SECONDS,
        )
        print(result.stdout[-4000:], result.stderr[-4000:])  # shown when a test fails
        return result


@pytest.fixture(scope="module")
def project(playback_archive: Path, tmp_path_factory: pytest.TempPathFactory) -> TeamProject:
    """The team's project over the session's archive (read in place), with its own lakehouse."""
    root = tmp_path_factory.mktemp("team_project")
    project = TeamProject(root, root / "data", playback_archive)
    stream = demo_spec_data("playback")
    stream["name"] = "team_playback"
    stream["archive"]["location"] = str(playback_archive)  # an archive root of the project's env()
    write_component(project.defs, "team_playback", stream)
    write_component(project.defs, "daily_activity", {"kind": "dataset", **daily_activity_spec()})
    (project.defs / "daily_activity" / "transform.py").write_text(TRANSFORM)
    return project


@pytest.fixture(scope="module")
def backfilled(project: TeamProject) -> TeamProject:
    project.dg(
        "launch",
        "--assets",
        "raw/team_playback_events,shadow/daily_activity__v1,prod/daily_activity_production",
        "--partition-range",
        f"{DAYS[0]}...{DAYS[-1]}",
    )
    return project


def test_dg_check_defs_accepts_the_project(project):
    result = project.dg("check", "defs")
    assert "All component YAML validated successfully." in result.stdout + result.stderr
    assert "All definitions loaded successfully." in result.stdout + result.stderr


def test_dg_list_defs_shows_the_team_assets(project):
    listed = json.loads(project.dg("list", "defs", "--json").stdout)
    keys = {asset["asset_key"] for asset in listed["assets"]}
    assert {
        "archive/team_playback_archive",
        "raw/team_playback_events",
        "shadow/daily_activity__v1",
        "prod/daily_activity_production",
    } <= keys, keys


def test_a_dg_launch_backfill_promotes_what_the_archive_holds(backfilled, truth):
    catalog = catalog_of(backfilled.data).load()
    rows = catalog.load_table("prod.daily_activity").scan().to_arrow().to_pylist()
    per_day: dict[str, int] = {}
    starts: dict[str, int] = {}
    for row in rows:
        day = row["event_date"].isoformat()
        per_day[day] = per_day.get(day, 0) + row["events"]
        if row["event_type"] == "start":
            starts[day] = row["events"]
    expected = {day: truth["partitions"][day]["written"] for day in DAYS}
    assert per_day == expected
    assert starts == {day: truth["partitions"][day]["starts"] for day in DAYS}


def test_the_cli_backfills_and_reports_the_team_project_from_its_folder(backfilled, truth):
    """The CLI finds the project as `dg` does, from the working directory: its own streams and datasets
    (none of the demo's), its code location for the run. No variable names the project."""
    rerun = backfilled.cli(
        "backfill",
        "--dataset",
        "daily_activity",
        "--start",
        DAYS[1],
        "--end",
        DAYS[2],
        "--reason",
        "team cli",
    )
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "promoted 1 day(s)" in rerun.stdout
    catalog = catalog_of(backfilled.data).load()
    production = catalog.load_table("prod.daily_activity")
    assert production.current_snapshot().summary["reason"] == "team cli"
    rows = production.scan(row_filter=f"event_date = '{DAYS[1]}'").to_arrow().to_pylist()
    assert sum(row["events"] for row in rows) == truth["partitions"][DAYS[1]]["written"]

    status = backfilled.cli("status")
    assert status.returncode == 0, status.stderr[-3000:]
    lines = [line for line in status.stdout.splitlines() if line.startswith("│")]
    assert {line.split("│")[1].strip() for line in lines} == {"daily_activity"}, status.stdout
    assert table_row(status.stdout, "daily_activity", DAYS[1])[2] == "promoted"
    assert str(production.current_snapshot().snapshot_id) in table_row(status.stdout, DAYS[1])[3]

    unknown = backfilled.cli("status", "--dataset", "views_per_title")
    assert unknown.returncode != 0
    assert f"unknown dataset 'views_per_title' in the project at {backfilled.root}" in unknown.stderr
    assert "known: ['daily_activity']" in unknown.stderr


def test_scaffolded_components_are_a_valid_starting_point(tmp_path):
    project = TeamProject(tmp_path, tmp_path / "data", tmp_path)
    project.dg("scaffold", "defs", "backfill_platform.components.Stream", "my_stream")
    project.dg("scaffold", "defs", "backfill_platform.components.Dataset", "my_dataset")
    assert (project.defs / "my_dataset" / "transform.py").is_file()
    result = project.dg("check", "defs")
    assert "All definitions loaded successfully." in result.stdout + result.stderr


def test_a_misspelt_attribute_names_the_file_and_line(tmp_path):
    project = TeamProject(tmp_path, tmp_path / "data", tmp_path)
    project.dg("scaffold", "defs", "backfill_platform.components.Stream", "my_stream")
    path = project.defs / "my_stream" / "defs.yaml"
    path.write_text(path.read_text().replace("allowed_lateness:", "allowed_latenes:"))
    result = project.dg("check", "defs", check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert f"{path}:" in output and "'allowed_lateness' is a required property" in output, output


def test_init_writes_a_project_and_never_overwrites_one(tmp_path):
    from click.testing import CliRunner

    from backfill_platform.cli import main

    target = tmp_path / "clicks_project"
    first = CliRunner().invoke(main, ["init", str(target)])
    assert first.exit_code == 0, first.output
    assert (target / "clicks_project" / "defs" / "lakehouse" / "defs.yaml").read_text().count(
        "type: backfill_platform.components.Lakehouse"
    ) == 1
    assert 'root_module = "clicks_project"' in (target / "pyproject.toml").read_text()
    second = CliRunner().invoke(main, ["init", str(target)])
    assert second.exit_code != 0 and "refusing to overwrite" in second.output
