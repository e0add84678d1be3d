"""(h) of the bench (devtools/bench/harness.multiply): an archive too big for the generator's memory, made of
copies of one it wrote, whose truth is the source's times the copies because each copy's ids are its own."""

from __future__ import annotations

import gzip
import json
from datetime import date
from pathlib import Path

import pytest

from backfill_platform.devtools.bench.harness import generate, multiply
from backfill_platform.devtools.bench.report import _growth


def _lines(root: Path) -> dict[str, list[dict]]:
    return {
        str(path.relative_to(root)): [
            json.loads(line) for line in gzip.decompress(path.read_bytes()).splitlines()
        ]
        for path in sorted(root.rglob("*.jsonl.gz"))
    }


def test_copies_hold_the_source_events_with_ids_of_their_own(tmp_path: Path) -> None:
    source = generate(tmp_path, "small", date(2026, 10, 1), 2, 300)
    copied = multiply(source, tmp_path, "copied", 3)

    before, after = _lines(source.data_dir), _lines(copied.data_dir)
    assert len(after) == 3 * len(before) == copied.totals["files"]
    assert sum(map(len, after.values())) == 3 * source.totals["lines"] == copied.totals["lines"]
    assert copied.written == {day: 3 * n for day, n in source.written.items()}
    assert copied.events_per_day == 3 * source.events_per_day and copied.days == source.days
    for name, records in before.items():
        # Part 0001 is the source file as it was; parts 0002 and 0003 beside it in the same hour.
        assert after[name] == records
        for copy in (1, 2):
            twin = after[name.replace("-0001.jsonl.gz", f"-{copy + 1:04d}.jsonl.gz")]
            assert [r["event_id"] for r in twin] == [f"c{copy:02d}-{r['event_id']}" for r in records]
            assert [{**r, "event_id": None} for r in twin] == [{**r, "event_id": None} for r in records]
    ids = [r["event_id"] for records in after.values() for r in records]
    # The source's duplicates stay duplicates within each copy, never across copies.
    assert len(set(ids)) == 3 * len({r["event_id"] for records in before.values() for r in records})


def test_a_file_whose_lines_do_not_each_hold_one_id_is_refused(tmp_path: Path) -> None:
    source = generate(tmp_path, "small", date(2026, 10, 1), 1, 50)
    victim = sorted(source.data_dir.rglob("*.jsonl.gz"))[0]
    victim.write_bytes(gzip.compress(gzip.decompress(victim.read_bytes()) + b'{"no_id": 1}\n'))
    with pytest.raises(ValueError, match=f"{victim}: .* event ids in .* lines"):
        multiply(source, tmp_path, "copied", 2)


def _run(group: str, variant: str, wall: float, rows: int, events_s: float | None = None) -> dict:
    steps = {"raw__playback_events": {"seconds": events_s, "driver_s": 1.0}} if events_s else {}
    return {
        "group": group,
        "variant": variant,
        "wall_s": wall,
        "expected_rows": rows,
        "days": 2,
        "steps": steps,
    }


def test_growth_reports_each_size_against_bare_spark_and_events_per_core() -> None:
    runs = [
        *(_run("compare", "baseline", wall, 600) for wall in (10.0, 12.0, 30.0)),
        *(
            _run("compare", "events", wall, 600, step)
            for wall, step in ((25.0, 20.0), (24.0, 19.0), (26.0, 30.0))
        ),
        _run("big", "baseline", 30.0, 3000),
        _run("big", "events", 45.0, 3000, 40.0),
        _run("big", "backfill", 60.0, 3000, 42.0),
        _run("files", "baseline", 5.0, 10),
    ]
    rows = _growth(runs, cpus=2)
    assert [row["case"] for row in rows] == ["compare", "big"]  # (g) is another stream's sizes
    compare, big = rows
    assert compare["bare_s"] == 12.0 and compare["events_s"] == 25.0 and compare["events_ratio"] == 2.083
    assert compare["backfill_s"] is None and compare["events_per_s_per_core"] == round(600 / 20.0 / 2)
    assert big["events_ratio"] == 1.5 and big["backfill_ratio"] == 2.0
    assert big["events_per_s_per_core"] == round(3000 / 40.0 / 2) and big["bare_events_per_s_per_core"] == 50
