"""Probes of the boundary (issue 30), inputs, on the file system and in a run: an archive file this process
may not read is refused, never read; an events window over a hostile archive (Spark) stores nothing from
outside its root. The other input probes, pure logic: the archive root (unit/archive/test_boundary.py),
`plan`'s refusals (unit/operations/test_plan.py), hostile YAML on both routes
(unit/specs/test_yaml_guard.py), the command line's answers (unit/cli/test_errors.py) and a replay's
checkpoint (unit/replay/test_checkpoint.py).
"""

from __future__ import annotations

import os

import pytest

from backfill_platform_tests.support.hostile import (  # noqa: F401 - nothing_outside is an autouse fixture
    hostile_archive,
    nothing_outside,
)

# --- the archive root is a boundary --------------------------------------------------------------


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


@pytest.mark.timeout(600)
def test_an_events_window_over_a_hostile_archive_stores_nothing_from_outside(spark, playback, data_dir):
    """The run itself (Spark): the host file behind a link is in neither the events nor the quarantine,
    and every refused entry is in the window's unlisted files."""
    import shutil
    from datetime import UTC, datetime, timedelta

    from backfill_platform.pipeline.archive.boundary import is_refusal
    from backfill_platform.pipeline.archive.stream_archive import archive_for
    from backfill_platform.pipeline.events.ingest import ingest_window
    from backfill_platform.pipeline.hour_mapping import ReadPlan
    from backfill_platform.pipeline.names import events_table, quarantine_table

    folder = data_dir / "issue30_hostile"
    root, expected = hostile_archive(folder)
    try:
        archive = playback.archive.model_copy(update={"location": str(root.relative_to(data_dir))})
        stream = playback.model_copy(update={"name": "issue30_hostile", "archive": archive})
        start = datetime(2026, 10, 1, tzinfo=UTC)
        result = ingest_window(
            spark, stream, archive_for(stream), ReadPlan.for_range(stream, start, start + timedelta(days=1))
        )
        stored = [*spark.table(events_table(spark, stream)).collect()]
        stored += spark.table(quarantine_table(spark, stream)).collect()
        assert stored and not any("host-file-line" in str(row) for row in stored)
        assert {f.name: f.why for f in result.unlisted if is_refusal(f.why)} == expected
    finally:
        shutil.rmtree(folder)  # the FIFO and device stay in no folder other tests may walk
