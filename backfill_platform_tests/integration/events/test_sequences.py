"""Per-producer sequence numbers in the payload (seed 004) prove a day complete: quiet hours are no
problem, and a record that never reached the archive holds the day back, its missing numbers named."""

from __future__ import annotations

import gzip
import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from backfill_platform.components.registry import demo_spec_data
from backfill_platform.pipeline.events.assets import build_events_asset
from backfill_platform.specs.stream import StreamSpec
from backfill_platform_tests.support.datasets import run
from backfill_platform_tests.support.session import START

# Archives in pytest's temporary folders: the operator's setting allows them (BACKFILL_PLATFORM_ARCHIVE_ROOTS).
pytestmark = pytest.mark.usefixtures("archive_roots_in_tmp")

D1 = datetime(START.year, START.month, START.day, tzinfo=UTC)
D2 = D1 + timedelta(days=1)


def sequenced_stream(name: str, root: Path) -> StreamSpec:
    raw = demo_spec_data("playback")
    raw["name"] = name
    raw["archive"]["location"] = str(root)
    raw["sequence"] = {"key": "producer_id", "field": "seq"}
    return StreamSpec.model_validate(raw)


def write_archive(root: Path, skip: set[tuple[str, int]] = frozenset()) -> dict[str, list]:
    """Three producers numbering 1, 2, 3, ... over two days, a few records an hour (many hours empty);
    one producer retries a record (same number twice). Returns each hour file's (producer, seq) list."""
    rng = random.Random(4)
    files: dict[str, list] = {}
    for producer in ("p1", "p2", "p3"):
        at, seq = D1, 0
        while at < D2 + timedelta(days=1):
            at += timedelta(minutes=rng.uniform(20, 240))
            seq += 1
            copies = 2 if (producer, seq) == ("p2", 9) else 1
            if (producer, seq) in skip:
                continue
            record = {"event_id": f"{producer}-{seq}", "producer_id": producer, "seq": seq,
                      "event_time": at.strftime("%Y-%m-%dT%H:%M:%S.000Z"), "user_id": "u", "title_id": "t",
                      "event_type": "start", "position_sec": 1, "device": "tv"}  # fmt: skip
            name = f"{at:%Y/%m/%d/%H}/{producer}.jsonl.gz"
            files.setdefault(name, []).extend([record] * copies)
    for name, records in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(root / name, "wt") as out:
            out.write("".join(json.dumps(r) + "\n" for r in records))
    return files


def settled(result) -> dict:
    return {c.partition: c for c in result.get_asset_check_evaluations() if c.check_name == "settled"}


@pytest.mark.parametrize("lost", ["none", "record_and_file"])
def test_sequence_holes_hold_the_day_back_naming_the_missing_numbers(tmp_path, spark_resource, lost):
    root = tmp_path / "archive"
    complete = write_archive(tmp_path / "complete")

    def first_day(producer: str) -> list[tuple[str, int]]:
        """A producer's records ingested in the first day's hours 10-19, by file, in number order."""
        return sorted((n, r["seq"]) for n, rs in complete.items() for r in rs
                      if r["producer_id"] == producer and n.startswith(f"{D1:%Y/%m/%d}/1"))  # fmt: skip

    p1, p3 = first_day("p1"), first_day("p3")
    # One record of p1 never arrived, nor did one whole file of p3 (every record of p3 in it).
    skipped = {"p1": {p1[1][1]}, "p3": {s for n, s in p3 if n == p3[2][0]}}
    if lost == "none":
        skipped = {}
    write_archive(root, {(producer, s) for producer, numbers in skipped.items() for s in numbers})
    spec = sequenced_stream(f"sequenced_{lost}", root)
    result = run(spark_resource, [build_events_asset(spec)], D1.date(), D2.date())
    verdicts = settled(result)
    assert len(verdicts) == 2
    if lost == "none":
        assert result.success and all(v.passed for v in verdicts.values())
        # Hours without any file were no problem: the numbers prove the days.
        assert len({n.rsplit("/", 1)[0] for n in complete}) < 48
        return
    problem = verdicts[D1.date().isoformat()].metadata["problem"].value
    assert not verdicts[D1.date().isoformat()].passed
    for producer, numbers in skipped.items():
        first, last = min(numbers), max(numbers)
        span = f"{first}" if first == last else f"{first}-{last}"
        assert f"sequence of producer_id {producer}: {span} missing (between files " in problem, problem
    assert problem.count("sequence of producer_id") == 2
    assert verdicts[D2.date().isoformat()].passed  # its window does not read the lost hours
