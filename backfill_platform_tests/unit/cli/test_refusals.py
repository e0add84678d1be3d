"""Every refusal a message (issue 59, part 6): each input that ended in a traceback or a hang now gets one
line naming it, and nothing is written; and the promises the docs made that the code did not keep."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from backfill_platform import settings
from backfill_platform.components.registry import Project
from backfill_platform.specs.stream import StreamSpec
from backfill_platform.specs.yaml_guard import SpecError
from backfill_platform_tests.support.hostile import (
    DATASET,
    component_file,
    dataset,
    nothing_outside,  # noqa: F401 - an autouse fixture
    project_with,
)
from backfill_platform_tests.support.projects import defs_folder, load_project, write_project
from backfill_platform_tests.support.specs import mutated

PLAN = ["plan", "--stream", "relay"]


def invoke(monkeypatch, project: Project | None, *args: str):
    """The command run in `project`'s folder (the command line reads the project it is run in)."""
    from click.testing import CliRunner

    from backfill_platform.cli import main

    if project is not None:
        monkeypatch.chdir(project.root)
    return CliRunner().invoke(main, list(args))


def refused(monkeypatch, project: Project | None, *args: str, status: int = 1) -> str:
    """The command's answer: `Error: …` on one line (click's usage errors add their `Try … --help`)."""
    result = invoke(monkeypatch, project, *args)
    assert result.exit_code == status, (result.exit_code, result.output, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception  # a message, not a crash
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, result.output
    return " ".join(result.output.split())


def relay_archive(tmp_path: Path, monkeypatch, lines: list[str]) -> Project:
    """A project whose stream `relay` reads an archive of one hour holding `lines`, in a folder the
    operator allows."""
    root = tmp_path / "archive"
    hour = root / "2026" / "10" / "01" / "03"
    hour.mkdir(parents=True)
    (hour / "part.jsonl").write_text("".join(line + "\n" for line in lines))
    monkeypatch.setenv(settings.ARCHIVE_ROOTS_ENV, str(tmp_path))
    relay = mutated(name="relay", archive__location=str(root), archive__compression="none")
    return write_project(tmp_path, [relay])


# --- plan ---------------------------------------------------------------------------------------------


@pytest.mark.timeout(120)
def test_plan_over_a_record_nested_200000_deep_answers(tmp_path, monkeypatch):
    deep = '{"event_id":"d","event_time":"2026-10-01T03:05:00Z","x":' + "[" * 200_000 + "]" * 200_000 + "}"
    nan = '{"event_id":"n","event_time":"2026-10-01T03:06:00Z","score":NaN}'
    project = relay_archive(tmp_path, monkeypatch, [deep, nan])
    result = invoke(monkeypatch, project, *PLAN, "--start", "2026-10-01", "--end", "2026-10-02")
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())
    assert "read 1 distinct archive files" in output and "2 lines" in output
    assert "1 of 2 sampled records hold non-standard numbers" in output  # the deep one: none found


def test_the_number_sample_walks_a_deep_record_without_recursion():
    from backfill_platform.operations.number_sample import _paths_of_tokens, _Token

    record: object = _Token("NaN")
    for _ in range(50_000):
        record = {"a": [record]}
    ((token, path),) = _paths_of_tokens(record)
    assert token == "NaN" and path.startswith("a[].a[]")


@pytest.mark.timeout(120)
def test_plan_over_two_centuries_is_bounded_by_what_the_stream_holds(tmp_path, monkeypatch):
    project = relay_archive(tmp_path, monkeypatch, ['{"event_id":"a","event_time":"2026-10-01T03:05:00Z"}'])
    began = time.monotonic()
    result = invoke(monkeypatch, project, *PLAN, "--start", "1970-01-01", "--end", "2199-01-01")
    assert result.exit_code == 0, result.output
    assert time.monotonic() - began < 60
    output = " ".join(result.output.split())
    today = settings.now().date()
    assert "planned 2026-10-01 to " in output and "what relay holds of the range" in output
    assert f"{today}" in output and "2026-09-30" not in output and "2199" not in output.split("planned")[1]
    before = refused(monkeypatch, project, *PLAN, "--start", "1970-01-01", "--end", "1980-01-01")
    assert "Error: relay holds no day in --start 1970-01-01 to --end 1980-01-01" in before
    assert "its days run from 2026-10-01 (first_partition)" in before


def test_plan_of_a_missing_archive_table_is_one_line(tmp_path, monkeypatch, data_dir):
    project = write_project(tmp_path, [mutated(name="relay", archive={"iceberg_table": "landing.nothing"})])
    output = refused(monkeypatch, project, *PLAN, "--start", "2026-10-01", "--end", "2026-10-02")
    assert "Error: archive table landing.nothing does not exist in the catalog" in output


# --- the command line's paths and options --------------------------------------------------------------


@pytest.mark.timeout(60)
def test_report_out_a_fifo_is_refused_not_waited_on(tmp_path, monkeypatch):
    fifo = tmp_path / "out.md"
    os.mkfifo(fifo)
    output = refused(monkeypatch, None, "report", "--backfill", "abc", "--out", str(fifo), status=2)
    assert f"Invalid value for '--out': {fifo}: not a regular file (a FIFO)" in output
    folder = refused(monkeypatch, None, "report", "--backfill", "abc", "--out", str(tmp_path), status=2)
    assert "not a regular file (a folder)" in folder
    nowhere = tmp_path / "none" / "out.md"
    missing = refused(monkeypatch, None, "report", "--backfill", "abc", "--out", str(nowhere), status=2)
    assert "its folder does not exist" in missing


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "args",
    [
        [
            "replay",
            "--stream",
            "s",
            "--start",
            "2026-10-01",
            "--end",
            "2026-10-02",
            "--to-kinesis",
            "k",
            "--checkpoint",
        ],
        ["generate", "--out"],
        ["bench", "--out"],
        ["init"],
    ],
    ids=["replay --checkpoint", "generate --out", "bench --out", "init PATH"],
)
def test_every_path_argument_is_checked_before_it_is_opened(tmp_path, monkeypatch, args):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    output = refused(monkeypatch, None, *args, str(fifo), status=2)
    assert f"{fifo}: not a" in output and "(a FIFO)" in output


@pytest.mark.timeout(60)
def test_a_file_swapped_for_a_fifo_after_the_check_is_refused_when_written(tmp_path):
    import click

    from backfill_platform.cli.app import write_regular_file

    fifo = tmp_path / "late.md"
    os.mkfifo(fifo)
    with pytest.raises(click.ClickException, match="not a regular file \\(a FIFO\\); nothing written"):
        write_regular_file(fifo, "# report\n")
    regular = tmp_path / "report.md"
    regular.write_text("longer old content\n")
    write_regular_file(regular, "# new\n")
    assert regular.read_text() == "# new\n"


def test_an_unknown_log_level_is_a_usage_error(monkeypatch):
    args = ["backfill", "--dataset", "views_per_title", "--start", "2026-10-01", "--end", "2026-10-02"]
    output = refused(monkeypatch, None, *args, "--log-level", "BOGUS", status=2)
    assert "Invalid value for '--log-level': 'BOGUS' is not one of" in output


@pytest.mark.parametrize("source", ["x; y", "x", "lake.legacy.t; DROP TABLE prod.x", "a.b.c.d", "a.`b`"])
def test_adopt_from_what_is_no_table_name_is_refused_before_spark_starts(monkeypatch, source):
    args = ["adopt", "--dataset", "views_per_title", "--from", source]
    output = refused(
        monkeypatch, None, *args, "--start", "2026-10-01", "--end", "2026-10-02", "--reason", "r"
    )
    assert f"Error: --from {source!r} is not a table name" in output


# --- spec fields the JVM would refuse, and the docs' promises ----------------------------------------


@pytest.mark.parametrize("zone", ["localtime", "Factory", "EST", "America/Coyhaique"])
def test_a_zone_python_knows_and_the_jvm_does_not_is_refused_at_load(tmp_path, zone):
    from zoneinfo import available_timezones

    assert zone in available_timezones()  # Python knows it: only the JVM check refuses it
    project = project_with(tmp_path, {"playback": mutated(), "views": dataset(partition_timezone=zone)})
    with pytest.raises(SpecError) as error:
        load_project(project)
    message = str(error.value)
    assert message.startswith(f"{component_file(project, 'views')}: field 'partition_timezone'")
    assert f"{zone!r} is a time zone Python knows but Spark's JVM does not" in message


def test_a_zone_both_know_loads(tmp_path):
    local = dataset(partition_timezone="America/New_York", bucket="partition")
    local.pop("bucket_column", None)
    specs = load_project(write_project(tmp_path, [mutated(), local]))
    assert specs.datasets["views_per_title"].partition_timezone == "America/New_York"
    assert DATASET.get("partition_timezone", "UTC") == "UTC"


@pytest.mark.parametrize("empty", ["", "  ", None])
def test_a_version_with_an_empty_non_standard_numbers_has_no_override(empty):
    spec = mutated(non_standard_numbers="missing")
    spec["schema_versions"][0]["non_standard_numbers"] = empty
    stream = StreamSpec.model_validate(spec)
    assert stream.schema_versions[0].non_standard_numbers is None
    assert stream.number_reading(stream.schema_versions[0]) == "missing"


def test_a_looping_symlink_in_an_archive_is_skipped_and_reported(tmp_path):
    from datetime import UTC, datetime

    from backfill_platform.pipeline.archive.listing import LocalArchive

    hour = tmp_path / "2026" / "10" / "01" / "03"
    hour.mkdir(parents=True)
    (hour / "good.jsonl").write_text("{}\n")
    (hour / "loop-a.jsonl").symlink_to("loop-b.jsonl")
    (hour / "loop-b.jsonl").symlink_to("loop-a.jsonl")
    (hour / "self.jsonl").symlink_to("self.jsonl")
    (hour.parent / "04").symlink_to("05")
    (hour.parent / "05").symlink_to("04")
    archive = LocalArchive(root=tmp_path.resolve(), layout="%Y/%m/%d/%H", compression="none")
    at = datetime(2026, 10, 1, 3, tzinfo=UTC)
    assert [f.name for f in archive.list_hour(at)] == ["2026/10/01/03/good.jsonl"]
    assert archive.list_hour(at.replace(hour=4)) == []
    reported = {f.name: f.why for f in archive.unlisted_files(at)}
    for name in ("03/loop-a.jsonl", "03/loop-b.jsonl", "03/self.jsonl", "04", "05"):
        assert reported[f"2026/10/01/{name}"].endswith("a broken or looping symlink"), reported


SECRET = "aws_secret_access_key: AKIA-not-a-real-secret: x"


@pytest.mark.parametrize("name", ["creds.yaml", "relay/defs.yaml"])
def test_a_spec_file_linked_out_of_its_folder_is_refused_unread(tmp_path, name):
    host = tmp_path / "host"
    host.mkdir()
    (host / "credentials").write_text(SECRET + "\n")
    project = write_project(tmp_path, [])
    defs = defs_folder(project.root)
    link = defs / name
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(host / "credentials")
    with pytest.raises(SpecError) as error:
        load_project(project)
    message = str(error.value)
    assert (
        message
        == f"{link}: a link leading out of the spec folder {defs}; a spec is a file of its folder (not read)"
    )
    assert "AKIA" not in message


def test_a_yaml_error_names_the_line_never_quotes_it(tmp_path):
    project = write_project(tmp_path, [])
    path = defs_folder(project.root) / "broken" / "defs.yaml"
    path.parent.mkdir()
    path.write_text("type: backfill_platform.components.Stream\n" + SECRET + "\n")
    with pytest.raises(SpecError) as error:
        load_project(project)
    message = str(error.value)
    assert message.startswith(f"{path}: line 2, column ") and "not valid YAML: " in message
    assert "AKIA" not in message and "\n" not in message


def test_a_link_to_a_spec_inside_the_folder_still_loads(tmp_path):
    project = write_project(tmp_path, [mutated(name="relay")])
    defs = defs_folder(project.root)
    (defs / "shared").mkdir()
    real = (defs / "relay" / "defs.yaml").rename(defs / "shared" / "relay.yaml")
    (defs / "relay" / "defs.yaml").symlink_to(real)  # a link that stays inside the defs folder
    assert real.exists() and "relay" in load_project(project).streams
