"""What `plan` says of the entries the archive boundary refused (operations/plan.py; issue 30): each named
with its reason, control characters and markup in a name made visible; through the command line, over a
hostile archive, without reading the FIFO or the links out."""

from __future__ import annotations

import pytest

from backfill_platform_tests.support.hostile import (  # noqa: F401 - nothing_outside is an autouse fixture
    hostile_archive,
    nothing_outside,
)
from backfill_platform_tests.support.projects import write_project
from backfill_platform_tests.support.specs import mutated


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
def test_plan_over_a_hostile_archive_names_what_it_refused(tmp_path, monkeypatch):
    """The CLI end to end, no Spark: `plan` lists the hour, reads neither the FIFO nor the links out."""
    from click.testing import CliRunner

    from backfill_platform.cli import main

    root, expected = hostile_archive(tmp_path)
    project = write_project(tmp_path, [mutated(name="hostile_relay", archive__location=str(root))])
    monkeypatch.chdir(project.root)  # the command line reads the project it is run in
    monkeypatch.setenv("BACKFILL_PLATFORM_ARCHIVE_ROOTS", str(tmp_path))  # the operator's setting
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
