"""Probes of the boundary (issue 30), inputs: archive entries outside the root or not regular files, hostile
YAML on both routes, and the command line's answers (one message, never a traceback or a hang)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from backfill_platform.specs.loader import MAX_SPEC_DEPTH, SpecError
from backfill_platform_tests.support.hostile import (  # noqa: F401 - nothing_outside is an autouse fixture
    DATASET,
    SENTINEL,
    dataset,
    hostile_archive,
    nothing_outside,
    refused_dataset,
    write_yaml,
)
from backfill_platform_tests.support.specs import mutated, write_spec

# --- the archive root is a boundary --------------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.unit
def test_the_archive_root_is_a_boundary(tmp_path):
    from datetime import UTC, datetime

    from backfill_platform.pipeline.archive.listing import LocalArchive

    root, expected = hostile_archive(tmp_path)
    archive = LocalArchive(root=root.resolve(), layout="%Y/%m/%d/%H")
    three, four = datetime(2026, 10, 1, 3, tzinfo=UTC), datetime(2026, 10, 1, 4, tzinfo=UTC)
    assert [f.name for f in archive.list_hour(three)] == [
        "2026/10/01/03/good.jsonl",
        "2026/10/01/03/inside-link.jsonl",
    ]
    assert archive.list_hour(four) == []  # an hour folder linked out of the root is not read
    unlisted = {f.name: f for f in archive.unlisted_files(three)}
    refused = {name: f.why for name, f in unlisted.items() if f.why in expected.values()}
    assert refused == expected
    assert all(unlisted[name].lines == 0 for name in refused)  # counted, never opened
    assert unlisted["2026/10/01/inside.jsonl"].why.startswith("outside the hour layout")
    # `plan` finds the same refusals through the stream's spec (and names them, below).
    from backfill_platform.operations.plan import refused_entries
    from backfill_platform.pipeline.archive.stream_archive import archive_for
    from backfill_platform.specs.stream import StreamSpec

    spec = mutated(archive__location=str(root), archive__allow_outside_data_roots=True)
    stream = StreamSpec.model_validate(spec)
    assert {f.name: f.why for f in refused_entries(stream, archive_for(stream))} == expected


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_an_unreadable_archive_file_is_refused_not_read(tmp_path):
    from datetime import UTC, datetime

    from backfill_platform.pipeline.archive.listing import LocalArchive

    hour = tmp_path / "2026" / "10" / "01" / "03"
    hour.mkdir(parents=True)
    (hour / "locked.jsonl").write_text("{}\n")
    (hour / "locked.jsonl").chmod(0)
    archive = LocalArchive(root=tmp_path.resolve(), layout="%Y/%m/%d/%H")
    start = datetime(2026, 10, 1, 3, tzinfo=UTC)
    assert archive.list_hour(start) == []
    assert [f.why for f in archive.unlisted_files(start)] == [
        "refused at the archive boundary, never read: unreadable (permission denied)"
    ]


@pytest.mark.unit
def test_plan_names_refused_entries_with_their_names_escaped(tmp_path):
    from backfill_platform.operations.plan import Plan, plan_summary
    from backfill_platform.pipeline.archive.boundary import REFUSED
    from backfill_platform.pipeline.archive.listing import UnlistedFile
    from backfill_platform.specs.stream import StreamSpec

    refused = [
        UnlistedFile("2026/10/01/03/fifo.jsonl", 0, 0, REFUSED + "a FIFO (named pipe), not a regular file"),
        UnlistedFile("2026/10/01/03/[bold red]x\x1b[2J.jsonl", 0, 0, REFUSED + "a broken or looping symlink"),
    ]
    unreadable = ["2026/10/01/03/[bold red]y\x07.gz"]
    plan = Plan(StreamSpec.model_validate(mutated()), [], [], 0, 0, 0, unreadable, None, refused=refused)
    corrupt = next(line for line in plan_summary(plan) if "corrupt gzip" in line)
    assert corrupt.endswith("2026/10/01/03/\\[bold red]y\\x07.gz") and "\x07" not in corrupt
    line = next(line for line in plan_summary(plan) if "refused" in line)
    assert "2 entries below the archive root refused at the archive boundary, never read" in line
    assert "2026/10/01/03/fifo.jsonl (a FIFO (named pipe), not a regular file)" in line
    assert "\\[bold red]x\\x1b[2J.jsonl (a broken or looping symlink)" in line and "\x1b" not in line


@pytest.mark.timeout(120)
@pytest.mark.unit
def test_plan_over_a_hostile_archive_names_what_it_refused(tmp_path, monkeypatch):
    """The CLI end to end, no Spark: `plan` lists the hour, reads neither the FIFO nor the links out."""
    from click.testing import CliRunner

    from backfill_platform.cli import main

    root, expected = hostile_archive(tmp_path)
    specs = tmp_path / "specs"
    specs.mkdir()
    write_spec(
        specs,
        "relay",
        mutated(name="hostile_relay", archive__location=str(root), archive__allow_outside_data_roots=True),
    )
    monkeypatch.setenv("BACKFILL_PLATFORM_SPECS", str(specs))
    result = CliRunner().invoke(
        main, ["plan", "--stream", "hostile_relay", "--start", "2026-10-01", "--end", "2026-10-02"]
    )
    output = " ".join(result.output.split())  # rich wraps long lines
    assert result.exit_code == 0, result.output
    assert (
        f"{len(expected)} entries below the archive root refused at the archive boundary, never read"
        in output
    )
    for name, why in expected.items():
        assert f"{name} ({why.split(': ', 1)[1]})" in output, (name, output)


# --- one YAML loader for both routes -------------------------------------------------------------

BOMB = "\n".join(
    ['    a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    + [f"    a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
)


YAML_PROBES = {
    "duplicate key": (
        lambda d: write_yaml(d, "dup.yaml", "kind: stream\nname: a\nname: b\n"),
        "line 3: key 'name' appears twice in one mapping (first on line 2)",
    ),
    "duplicate nested key": (
        lambda d: write_yaml(
            d, "c/defs.yaml", "type: backfill_platform.components.Stream\nattributes:\n  a: 1\n  a: 2\n"
        ),
        "line 4: key 'a' appears twice",
    ),
    "bomb in attributes": (
        lambda d: write_yaml(
            d, "b/defs.yaml", "type: backfill_platform.components.Stream\nattributes:\n" + BOMB + "\n"
        ),
        "YAML nodes (aliases expanded)",
    ),
    "deep nesting in attributes": (
        lambda d: write_yaml(
            d, "n/defs.yaml", "type: x\nattributes:\n  a: " + "[" * 100_000 + "]" * 100_000 + "\n"
        ),
        f"line 3: YAML nested deeper than {MAX_SPEC_DEPTH} levels",
    ),
    "10 MB component": (
        lambda d: write_yaml(
            d, "h/defs.yaml", "type: x\nattributes:\n  description: " + "x" * (10 << 20) + "\n"
        ),
        "larger than a spec may be",
    ),
    "python tag": (
        lambda d: write_yaml(d, "p.yaml", "kind: !!python/object/apply:os.system ['true']\n"),
        "line 1: YAML tag",
    ),
    "not UTF-8": (
        lambda d: (
            write_yaml(d, "u.yaml", "kind: stream\n")
            and (d / "u.yaml").write_bytes(b"\xff\xfe")
            and d / "u.yaml"
        ),
        "not UTF-8",
    ),
    "FIFO": (lambda d: os.mkfifo(d / "f.yaml") or d / "f.yaml", "not a regular file (a FIFO)"),
    "link to /dev/zero": (
        lambda d: (d / "z.yaml").symlink_to("/dev/zero") or d / "z.yaml",
        "not a regular file (a device)",
    ),
    "folder named .yaml": (
        lambda d: (d / "d.yaml").mkdir() or d / "d.yaml",
        "not a regular file (a directory)",
    ),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("probe", list(YAML_PROBES))
@pytest.mark.unit
def test_hostile_yaml_is_refused_on_both_routes_with_file_and_line(tmp_path, probe):
    from backfill_platform.specs.loader import load_spec_file
    from backfill_platform.specs.yaml_guard import check_folder

    make, words = YAML_PROBES[probe]
    path = make(tmp_path)
    with pytest.raises(SpecError) as loader_route:
        load_spec_file(path)
    with pytest.raises(SpecError) as components_route:  # what definitions.py runs before Dagster parses
        check_folder(tmp_path)
    for error in (loader_route, components_route):
        assert str(error.value).startswith(f"{path}: ") and words in str(error.value), str(error.value)


@pytest.mark.unit
def test_the_components_route_checks_before_dagster_parses():
    """Both code locations that load defs folders (the platform's and `init`'s) run the check first."""
    import backfill_platform.definitions as definitions
    from backfill_platform.components.project import DEFINITIONS

    assert (
        "check_folder(Path(backfill_platform.defs.__file__).parent)" in Path(definitions.__file__).read_text()
    )
    assert 'check_folder(Path(__file__).parent / "defs")' in DEFINITIONS


# --- messages, not tracebacks --------------------------------------------------------------------


def cli(monkeypatch, spec_folder: Path | None, *args: str):
    from click.testing import CliRunner

    from backfill_platform.cli import main

    if spec_folder is not None:
        monkeypatch.setenv("BACKFILL_PLATFORM_SPECS", str(spec_folder))
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 1, (result.exit_code, result.output)
    assert isinstance(result.exception, SystemExit), result.exception  # a message, not an exception
    assert "Traceback" not in result.output and result.output.strip().startswith("Error: "), result.output
    return result.output


@pytest.mark.timeout(120)
@pytest.mark.unit
def test_a_refused_spec_is_one_message_with_its_name_made_visible(tmp_path, monkeypatch):
    path = write_yaml(tmp_path, "x\x1b[2J[bold red].yaml", "kind: stream\nname: a\nname: b\n")
    output = cli(
        monkeypatch, tmp_path, "plan", "--stream", "a", "--start", "2026-10-01", "--end", "2026-10-02"
    )
    assert "x\\x1b[2J[bold red].yaml: line 3: key 'name' appears twice" in output and "\x1b" not in output
    assert path.exists()


REPLAY = ["replay", "--stream", "relay", "--start", "2026-10-01", "--end", "2026-10-02"]


def replay_spec(folder: Path) -> Path:
    spec = mutated(
        name="relay", live_kinesis_stream="relay-live", backfill_kinesis_streams=["relay-backfill"]
    )
    write_spec(folder, "relay", spec)
    return folder


@pytest.mark.timeout(120)
@pytest.mark.unit
def test_a_replay_to_the_live_stream_is_refused_before_any_aws_setting_is_needed(tmp_path, monkeypatch):
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    output = cli(monkeypatch, replay_spec(tmp_path), *REPLAY, "--to-kinesis", "relay-live")
    assert "'relay-live' is the live Kinesis stream of 'relay'" in output
    output = cli(monkeypatch, None, *REPLAY, "--to-kinesis", "relay-backfill")
    assert "no AWS region is configured: set AWS_REGION" in output


@pytest.mark.timeout(60)
@pytest.mark.unit
def test_a_checkpoint_that_is_a_fifo_is_refused_not_waited_on(tmp_path):
    from backfill_platform.pipeline.replay.checkpoint import CheckpointMismatch, load

    os.mkfifo(tmp_path / "checkpoint.json")
    with pytest.raises(CheckpointMismatch, match="is not a regular file"):
        load(tmp_path / "checkpoint.json")


@pytest.mark.timeout(120)
@pytest.mark.unit
def test_an_unreachable_catalog_is_named_without_its_password(tmp_path, monkeypatch):
    monkeypatch.setenv(
        "BACKFILL_PLATFORM_CATALOG_SQL_URI", "postgresql+psycopg://team:pw-issue30@127.0.0.1:9/lake"
    )
    monkeypatch.setenv("BACKFILL_PLATFORM_CATALOG_JDBC_URI", "jdbc:postgresql://127.0.0.1:9/lake")
    write_spec(tmp_path, "playback", mutated())
    output = cli(
        monkeypatch, None, "plan", "--stream", "playback", "--start", "2026-10-01", "--end", "2026-10-02"
    )
    assert "the Iceberg catalog's database cannot be reached or used" in output
    assert "pw-issue30" not in output


@pytest.mark.timeout(600)
def test_an_events_window_over_a_hostile_archive_stores_nothing_from_outside(spark, playback, data_dir):
    """The run itself (Spark): the host file behind a link is in neither the events nor the quarantine,
    and every refused entry is in the window's unlisted files."""
    import shutil
    from datetime import UTC, datetime, timedelta

    from backfill_platform.pipeline.archive.boundary import is_refusal
    from backfill_platform.pipeline.archive.stream_archive import archive_for
    from backfill_platform.pipeline.events.ingest import events_table, ingest_window, quarantine_table

    folder = data_dir / "issue30_hostile"
    root, expected = hostile_archive(folder)
    try:
        archive = playback.archive.model_copy(update={"location": str(root.relative_to(data_dir))})
        stream = playback.model_copy(update={"name": "issue30_hostile", "archive": archive})
        start = datetime(2026, 10, 1, tzinfo=UTC)
        result = ingest_window(spark, stream, archive_for(stream), start, start + timedelta(days=1))
        stored = [*spark.table(events_table(spark, stream)).collect()]
        stored += spark.table(quarantine_table(spark, stream)).collect()
        assert stored and not any("host-file-line" in str(row) for row in stored)
        assert {f.name: f.why for f in result.unlisted if is_refusal(f.why)} == expected
    finally:
        shutil.rmtree(folder)  # the FIFO and device stay in no folder other tests may walk
