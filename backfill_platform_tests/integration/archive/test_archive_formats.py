"""The session's generated archive (duplicates, late files, a schema change, defects) rewritten as
concatenated JSON and as Parquet, read into the same events as its JSON lines, with every record counted.

Each converted file holds the JSON objects of the original file, in order; what is not a JSON object
(truncated lines, invalid UTF-8, several objects on a line) cannot be carried into another format and is
left out, so a day reads the generator's records minus those. Each format adds its own defects: text
between objects and an object with `}{` and escaped quotes in its strings (concatenated), a damaged file
(Parquet). The expectations come from the generator's truth and the converted files, never from the
platform's output.
"""

from __future__ import annotations

import json
import random
from datetime import date, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from backfill_platform.pipeline.archive.listing import hour_of
from backfill_platform.pipeline.archive.records import iter_lines
from backfill_platform.pipeline.archive.stream_archive import archive_for
from backfill_platform.pipeline.events.ingest import ingest_window
from backfill_platform.pipeline.hour_mapping import ReadPlan
from backfill_platform.pipeline.names import events_table, quarantine_table
from backfill_platform.specs.durations import DAY, midnight
from backfill_platform.specs.stream import StreamSpec
from backfill_platform_tests.support.session import DAYS, START

WINDOW = (midnight(START), midnight(START) + DAYS * DAY)
EXTRA_ID = "braces-in-strings"
EXTRA = {  # a version-1 event (the archive's first days) whose strings hold `}{` and escaped quotes
    "event_id": EXTRA_ID,
    "event_time": f"{START + timedelta(days=1)}T10:30:00.000Z",
    "user_id": 'u"}{"',
    "title_id": "t\\}{",
    "event_type": "start",
    "position_sec": 0,
    "device": "{tv}",
}
COMPARED = ["event_id", "event_time", "_schema_version", "_ingestion_time"]


def _objects(path: Path) -> tuple[list[str], int]:
    """The lines of a file that are one JSON object each, and how many lines are not."""
    kept, left_out = [], 0
    for _n, text, raw, defect, _detail in iter_lines(str(path), 1 << 30):
        try:
            value = json.loads(text) if raw is None and defect is None else None
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            kept.append(text)
        else:
            left_out += 1
    return kept, left_out


def _column(values: list) -> pa.Array:
    """Typed where every value has one JSON type; otherwise (a wrong-typed field) each value's JSON text."""
    kinds = {type(v) for v in values if v is not None}
    if len(kinds) <= 1 and not kinds & {dict, list}:
        return pa.array(values)
    return pa.array([v if v is None or isinstance(v, str) else json.dumps(v) for v in values], pa.string())


def _convert(source: Path, target: Path, fmt: str, playback: StreamSpec) -> dict[str, int]:
    """Write every file of `source` to `target` in `fmt`; return the records left out per event-time
    day of attribution (a left-out record is quarantined in JSON lines, attributed to its hour's day)."""
    rng = random.Random(7)
    left_out: dict[str, int] = {}
    for path in sorted(source.rglob("*.gz")):
        relative = path.relative_to(source)
        hour = hour_of(str(relative.parent), playback.archive.layout)
        if hour is None:
            continue
        kept, dropped = _objects(path)
        day = max(hour.date(), playback.first_partition).isoformat()
        left_out[day] = left_out.get(day, 0) + dropped
        out = target / relative.parent / relative.name.replace(".jsonl.gz", f".{fmt}")
        out.parent.mkdir(parents=True, exist_ok=True)
        if fmt == "json":
            out.write_bytes("".join(t + rng.choice(["", "", " ", "\n", "\r\n"]) for t in kept).encode())
        else:
            rows = [json.loads(t) for t in kept]
            names = sorted({k for row in rows for k in row})
            pq.write_table(pa.table({n: _column([row.get(n) for row in rows]) for n in names}), out)
    return left_out


def _read_and_figures(spark, spec: StreamSpec):
    result = ingest_window(spark, spec, archive_for(spec), ReadPlan.for_range(spec, *WINDOW))
    events = spark.table(events_table(spark, spec)).where(F.col("event_time") >= WINDOW[0])
    quarantine = spark.table(quarantine_table(spark, spec))
    return result, events, quarantine


def _stream(playback: StreamSpec, name: str, fmt: str) -> StreamSpec:
    archive = playback.archive.model_copy(update={"location": f"archive/{name}", "format": fmt})
    return playback.model_copy(update={"name": name, "archive": archive})


def _assert_same_events(spark, playback: StreamSpec, events, extra: set[str] = frozenset()):
    reference = spark.table(events_table(spark, playback)).where(F.col("event_time") >= WINDOW[0])
    reference = reference.where(F.col("event_time") < WINDOW[1])
    columns = COMPARED + list(playback.latest.fields)
    ours = events.where(~F.col("event_id").isin(*extra)) if extra else events
    assert ours.select(*columns).exceptAll(reference.select(*columns)).count() == 0
    assert reference.select(*columns).exceptAll(ours.select(*columns)).count() == 0


def _assert_accounted(result, events, quarantine, truth: dict, left_out: dict, added: dict):
    written = {
        r["d"].isoformat(): r["count"]
        for r in events.groupBy(F.to_date("event_time").alias("d")).count().collect()
    }
    held = {
        r["d"].isoformat(): r["count"]
        for r in quarantine.groupBy(F.to_date("attributed_time").alias("d")).count().collect()
    }
    for i in range(DAYS):
        day = (START + timedelta(days=i)).isoformat()
        figures, expected = result.partitions[day], truth["partitions"][day]
        assert figures.records == expected["records"] - left_out.get(day, 0) + added.get(day, 0), day
        assert figures.records == written.get(day, 0) + figures.duplicates + held.get(day, 0), day


@pytest.fixture(scope="module")
def reference_events(events_materialized):
    return events_materialized


def test_concatenated_json_reads_the_events_of_json_lines(spark, playback, truth, data_dir, reference_events):
    name = "formats_concatenated"
    left_out = _convert(data_dir / "archive" / "playback", data_dir / "archive" / name, "json", playback)
    # Text between two objects, and an object whose strings hold `}{` and escaped quotes, on day 2.
    day2 = START + timedelta(days=1)
    target = sorted((data_dir / "archive" / name / f"{day2:%Y/%m/%d}" / "10").iterdir())[0]
    target.write_bytes(target.read_bytes() + b"\n  oops, not JSON\n" + json.dumps(EXTRA).encode())
    spec = _stream(playback, name, "json_concatenated")
    result, events, quarantine = _read_and_figures(spark, spec)

    _assert_same_events(spark, playback, events, extra={EXTRA_ID})
    (row,) = events.where(F.col("event_id") == EXTRA_ID).collect()
    assert (row["user_id"], row["title_id"], row["device_type"]) == ('u"}{"', "t\\}{", "{tv}")
    assert (
        events.count()
        == sum(
            truth["partitions"][d]["written"] for d in truth["partitions"] if d < WINDOW[1].date().isoformat()
        )
        + 1
    )
    _assert_accounted(result, events, quarantine, truth, left_out, {day2.isoformat(): 2})
    (oops,) = quarantine.where(F.col("line") == "oops, not JSON").collect()
    assert oops["reason"] == "malformed_json" and oops["_source_file"] == str(
        target.relative_to(data_dir / "archive" / name)
    )


def test_parquet_rows_read_the_events_of_json_lines(spark, playback, truth, data_dir, reference_events):
    name = "formats_parquet"
    left_out = _convert(data_dir / "archive" / "playback", data_dir / "archive" / name, "parquet", playback)
    day3 = START + timedelta(days=2)
    damaged = data_dir / "archive" / name / f"{day3:%Y/%m/%d}" / "07" / "damaged.parquet"
    damaged.write_bytes(b"PAR1 this is not a parquet file")
    spec = _stream(playback, name, "parquet")
    result, events, quarantine = _read_and_figures(spark, spec)

    _assert_same_events(spark, playback, events)
    _assert_accounted(result, events, quarantine, truth, left_out, {day3.isoformat(): 1})
    (unreadable,) = quarantine.where(F.col("reason") == "unreadable_file").collect()
    assert unreadable["_source_file"] == str(damaged.relative_to(data_dir / "archive" / name))
    assert "after 0 records" in unreadable["detail"]
    # Record numbers are row numbers within each file.
    numbers = events.groupBy("_source_file").agg(F.min("_line_number").alias("lo")).collect()
    assert min(r["lo"] for r in numbers) == 1
    assert date.fromisoformat(result.partitions[day3.isoformat()].partition) == day3
