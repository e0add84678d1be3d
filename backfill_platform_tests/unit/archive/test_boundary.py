"""The archive root is a boundary (pipeline/archive/boundary.py; issue 30): below it, links leading out, a
broken link, a FIFO, a device or an hour folder linked out are refused at listing, counted and never opened,
and `plan` finds the same refusals through the stream's spec."""

from __future__ import annotations

import pytest

from backfill_platform.settings import ARCHIVE_ROOTS_ENV
from backfill_platform_tests.support.hostile import (  # noqa: F401 - nothing_outside is an autouse fixture
    hostile_archive,
    nothing_outside,
)
from backfill_platform_tests.support.specs import mutated


@pytest.mark.timeout(60)
def test_the_archive_root_is_a_boundary(tmp_path, monkeypatch):
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

    monkeypatch.setenv(ARCHIVE_ROOTS_ENV, str(tmp_path))  # the operator's setting: tmp_path is a root
    spec = mutated(archive__location=str(root))
    stream = StreamSpec.model_validate(spec)
    assert {f.name: f.why for f in refused_entries(stream, archive_for(stream))} == expected
