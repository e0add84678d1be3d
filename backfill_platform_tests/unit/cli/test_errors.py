"""The command line's answers to hostile or wrong input (cli/errors.py; issue 30): one message and exit
code 1, never a traceback or a hang: a refused spec with its name made visible, a replay to the live stream
refused before any AWS setting is needed, an unreachable catalog named without its password."""

from __future__ import annotations

from pathlib import Path

import pytest

from backfill_platform.components.registry import Project
from backfill_platform_tests.support.hostile import (  # noqa: F401 - nothing_outside is an autouse fixture
    nothing_outside,
    write_yaml,
)
from backfill_platform_tests.support.projects import defs_folder, write_project
from backfill_platform_tests.support.specs import mutated


def cli(monkeypatch, project: Project | None, *args: str):
    """The command's answer, run in `project`'s folder (the command line reads the project it is run in)."""
    from click.testing import CliRunner

    from backfill_platform.cli import main

    if project is not None:
        monkeypatch.chdir(project.root)
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 1, (result.exit_code, result.output)
    assert isinstance(result.exception, SystemExit), result.exception  # a message, not an exception
    assert "Traceback" not in result.output and result.output.strip().startswith("Error: "), result.output
    return result.output


@pytest.mark.timeout(120)
def test_a_refused_spec_is_one_message_with_its_name_made_visible(tmp_path, monkeypatch):
    project = write_project(tmp_path, [])
    text = "type: backfill_platform.components.Stream\nattributes:\n  name: a\n  name: b\n"
    path = write_yaml(defs_folder(project.root), "x\x1b[2J[bold red]/defs.yaml", text)
    output = cli(
        monkeypatch, project, "plan", "--stream", "a", "--start", "2026-10-01", "--end", "2026-10-02"
    )
    assert "x\\x1b[2J[bold red]/defs.yaml: line 4: key 'name' appears twice" in output
    assert "\x1b" not in output
    assert path.exists()


REPLAY = ["replay", "--stream", "relay", "--start", "2026-10-01", "--end", "2026-10-02"]


def replay_project(parent: Path) -> Project:
    spec = mutated(
        name="relay", live_kinesis_stream="relay-live", backfill_kinesis_streams=["relay-backfill"]
    )
    return write_project(parent, [spec])


@pytest.mark.timeout(120)
def test_a_replay_to_the_live_stream_is_refused_before_any_aws_setting_is_needed(tmp_path, monkeypatch):
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    output = cli(monkeypatch, replay_project(tmp_path), *REPLAY, "--to-kinesis", "relay-live")
    assert "'relay-live' is the live Kinesis stream of 'relay'" in output
    output = cli(monkeypatch, None, *REPLAY, "--to-kinesis", "relay-backfill")
    assert "no AWS region is configured: set AWS_REGION" in output


@pytest.mark.timeout(120)
def test_an_unreachable_catalog_is_named_without_its_password(tmp_path, monkeypatch):
    monkeypatch.setenv(
        "BACKFILL_PLATFORM_CATALOG_SQL_URI", "postgresql+psycopg://team:pw-issue30@127.0.0.1:9/lake"
    )
    monkeypatch.setenv("BACKFILL_PLATFORM_CATALOG_JDBC_URI", "jdbc:postgresql://127.0.0.1:9/lake")
    output = cli(
        monkeypatch, None, "plan", "--stream", "playback", "--start", "2026-10-01", "--end", "2026-10-02"
    )
    assert "the Iceberg catalog's database cannot be reached or used" in output
    assert "pw-issue30" not in output
