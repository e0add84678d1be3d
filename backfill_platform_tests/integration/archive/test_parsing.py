"""Parsing and upcasting of every schema version, both time formats, and lateness at the day boundary."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime, timedelta
from itertools import count
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from backfill_platform.components.registry import demo_spec_data
from backfill_platform.pipeline.archive.stream_archive import archive_for
from backfill_platform.pipeline.events.ingest import ingest_window
from backfill_platform.pipeline.hour_mapping import ReadPlan
from backfill_platform.pipeline.names import events_table, quarantine_table
from backfill_platform.specs.stream import StreamSpec

# Archives in pytest's temporary folders: the operator's setting allows them (BACKFILL_PLATFORM_ARCHIVE_ROOTS).
pytestmark = pytest.mark.usefixtures("archive_roots_in_tmp")

_names = count()
DAY1 = datetime(2026, 10, 1, tzinfo=UTC)
DAY2 = DAY1 + timedelta(days=1)
DAY3 = DAY2 + timedelta(days=1)


def stream_in(tmp_path: Path) -> StreamSpec:
    """The demo spec under a fresh name, with its archive in a temporary folder."""
    raw = demo_spec_data("playback")
    raw["name"] = f"case_{next(_names)}"
    raw["archive"]["location"] = str(tmp_path / "archive")
    return StreamSpec.model_validate(raw)


def deliver(spec: StreamSpec, hour: datetime, records: list[dict | str], name: str = "part-0001") -> None:
    folder = Path(spec.archive.location) / hour.strftime(spec.archive.layout)
    folder.mkdir(parents=True, exist_ok=True)
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    with gzip.open(folder / f"{name}.jsonl.gz", "wt") as out:
        out.write("\n".join(lines) + "\n")


def v1(event_id: str, at: datetime, **extra) -> dict:
    iso = at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"
    return {"event_id": event_id, "event_time": iso, "user_id": "u1", "title_id": "t1",
            "event_type": "start", "position_sec": 7, "device": "tv", **extra}  # fmt: skip


def v2(event_id: str, at: datetime, **extra) -> dict:
    return {"schema_version": 2, "event_id": event_id, "event_time": int(at.timestamp() * 1000),
            "user_id": "u1", "title_id": "t1", "event_type": "stop", "position_sec": 42,
            "device_type": "mobile", "country": "BR", **extra}  # fmt: skip


def events(spark, spec) -> dict[str, dict]:
    return {r["event_id"]: r.asDict() for r in spark.table(events_table(spark, spec)).collect()}


def quarantined(spark, spec) -> dict[str, dict]:
    rows = spark.table(quarantine_table(spark, spec)).collect()
    return {f"{r['_source_file']}:{r['_line_number']}": r.asDict() for r in rows}


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        (
            v1("a", datetime(2026, 10, 1, 10, 15, 30, 250000, tzinfo=UTC)),
            {"event_time": datetime(2026, 10, 1, 10, 15, 30, 250000), "device_type": "tv",
             "country": "unknown", "position_sec": 7, "_schema_version": 1},
        ),
        (
            v2("a", datetime(2026, 10, 1, 10, 15, 30, 250000, tzinfo=UTC)),
            {"event_time": datetime(2026, 10, 1, 10, 15, 30, 250000), "device_type": "mobile",
             "country": "BR", "position_sec": 42, "_schema_version": 2},
        ),
    ],
    ids=["v1-iso8601", "v2-epoch-millis"],
)  # fmt: skip
def test_every_version_is_upcast_to_the_latest(tmp_path, spark, record, expected):
    spec = stream_in(tmp_path)
    deliver(spec, datetime(2026, 10, 1, 10, tzinfo=UTC), [record])
    ingest_window(spark, spec, archive_for(spec), ReadPlan.for_range(spec, DAY1, DAY2))
    row = events(spark, spec)["a"]
    assert {k: row[k] for k in expected} == expected
    assert set(row) >= set(spec.latest.fields)
    assert row["_source_file"] == "2026/10/01/10/part-0001.jsonl.gz" and row["_line_number"] == 1


def test_three_hours_late_across_midnight_lands_in_its_event_day(tmp_path, spark):
    spec = stream_in(tmp_path)
    event_time = datetime(2026, 10, 1, 23, 40, tzinfo=UTC)
    deliver(spec, datetime(2026, 10, 2, 2, tzinfo=UTC), [v1("late", event_time)])  # ingested 3 h later
    result = ingest_window(spark, spec, archive_for(spec), ReadPlan.for_range(spec, DAY1, DAY3))
    row = events(spark, spec)["late"]
    assert row["event_time"] == event_time.replace(tzinfo=None)
    assert row["_ingestion_time"] == datetime(2026, 10, 2, 2)
    assert result.partitions["2026-10-01"].written == 1 and result.partitions["2026-10-01"].late == 1
    assert result.partitions["2026-10-02"].records == 0

    # Re-deriving day 1 alone still finds it: the window reads the lateness horizon past midnight.
    result = ingest_window(spark, spec, archive_for(spec), ReadPlan.for_range(spec, DAY1, DAY2))
    assert result.partitions["2026-10-01"].written == 1
    assert "late" in events(spark, spec)


def test_beyond_allowed_lateness_is_quarantined_in_the_ingestion_day_and_counted(tmp_path, spark):
    spec = stream_in(tmp_path)
    event_time = datetime(2026, 10, 1, 12, tzinfo=UTC)
    deliver(spec, datetime(2026, 10, 2, 9, tzinfo=UTC), [v1("too-late", event_time)])  # 21 h late > 8 h
    ahead = datetime(2026, 10, 2, 10, 50, tzinfo=UTC)  # producer clock 50 min ahead of its 10:00 bucket
    deliver(spec, datetime(2026, 10, 2, 9, tzinfo=UTC), [v1("ahead", ahead)], name="part-0002")
    result = ingest_window(spark, spec, archive_for(spec), ReadPlan.for_range(spec, DAY1, DAY3))
    assert "too-late" not in events(spark, spec)
    assert result.partitions["2026-10-01"].records == 0
    day2 = result.partitions["2026-10-02"]
    assert day2.quarantined["too_late"] == 1 and day2.quarantined["clock_skew"] == 1
    assert day2.records == day2.written + day2.duplicates + day2.quarantined_total == 2
    rows = quarantined(spark, spec)
    late = rows["2026/10/02/09/part-0001.jsonl.gz:1"]
    assert late["reason"] == "too_late" and late["event_id"] == "too-late"
    assert late["attributed_time"] == datetime(2026, 10, 2, 9)
    assert rows["2026/10/02/09/part-0002.jsonl.gz:1"]["reason"] == "clock_skew"


def test_bad_lines_are_quarantined_with_reason_line_and_raw_text(tmp_path, spark):
    spec = stream_in(tmp_path)
    at = datetime(2026, 10, 1, 5, 30, tzinfo=UTC)
    bad = [
        v1("ok", at),
        '{"event_id": "cut", "event_ti',
        {k: v for k, v in v1("x", at).items() if k != "event_id"},
        v1("badtime", at, event_time="not-a-time"),
        v2("badtime2", at, event_time="17x"),
        v2("badtype", at, position_sec="forty"),
        v2("future", at, schema_version=3),
        v1("ok", at),  # the same line again: a duplicate delivery
    ]
    deliver(spec, datetime(2026, 10, 1, 5, tzinfo=UTC), bad)
    result = ingest_window(spark, spec, archive_for(spec), ReadPlan.for_range(spec, DAY1, DAY2))
    figures = result.partitions["2026-10-01"]
    assert (figures.records, figures.written, figures.duplicates) == (8, 1, 1)
    reasons = {int(key.split(":")[1]): row["reason"] for key, row in quarantined(spark, spec).items()}
    assert reasons == {
        2: "malformed_json",
        3: "missing_event_id",
        4: "unparseable_event_time",
        5: "unparseable_event_time",
        6: "invalid_field",
        7: "unknown_schema_version",
    }
    detail = spark.table(quarantine_table(spark, spec)).where(F.col("reason") == "invalid_field").first()
    assert detail["detail"] == "position_sec" and '"forty"' in detail["line"]


def test_conflicting_payloads_are_counted_and_the_losing_one_kept(tmp_path, spark):
    spec = stream_in(tmp_path)
    at = datetime(2026, 10, 1, 8, 0, tzinfo=UTC)
    deliver(spec, datetime(2026, 10, 1, 8, tzinfo=UTC), [v1("dup", at)])
    deliver(spec, datetime(2026, 10, 1, 9, tzinfo=UTC), [v1("dup", at, position_sec=99)])
    result = ingest_window(spark, spec, archive_for(spec), ReadPlan.for_range(spec, DAY1, DAY2))
    figures = result.partitions["2026-10-01"]
    assert (figures.written, figures.duplicates, figures.conflicting_ids) == (1, 0, 1)
    assert figures.quarantined["conflicting_duplicate"] == 1
    assert events(spark, spec)["dup"]["position_sec"] == 7  # the earliest delivery wins
    loser = quarantined(spark, spec)["2026/10/01/09/part-0001.jsonl.gz:1"]
    assert loser["reason"] == "conflicting_duplicate" and '"position_sec": 99' in loser["line"]
    assert loser["detail"] == "kept 2026/10/01/08/part-0001.jsonl.gz:1"


def test_archive_paths_with_spaces_and_equals_signs_are_read_and_named(tmp_path, spark):
    raw = demo_spec_data("playback")
    raw["name"] = f"case_{next(_names)}"
    raw["archive"]["location"] = str(tmp_path / "my archive")
    raw["archive"]["layout"] = "dt=%Y-%m-%d/hour=%H"
    spec = StreamSpec.model_validate(raw)
    deliver(
        spec,
        datetime(2026, 10, 1, 7, tzinfo=UTC),
        [v1("a", datetime(2026, 10, 1, 7, 5, tzinfo=UTC))],
        name="p+1%",
    )
    result = ingest_window(spark, spec, archive_for(spec), ReadPlan.for_range(spec, DAY1, DAY2))
    assert result.partitions["2026-10-01"].written == 1
    assert events(spark, spec)["a"]["_source_file"] == "dt=2026-10-01/hour=07/p+1%.jsonl.gz"


def test_cast_and_drop_steps_upcast_and_a_lossy_cast_is_an_invalid_field(tmp_path, spark):
    raw = demo_spec_data("playback")
    raw["name"] = f"case_{next(_names)}"
    raw["archive"]["location"] = str(tmp_path / "archive")
    first = raw["schema_versions"][0]
    first["fields"].update(position_sec="double", legacy="string")
    first["upcast"] += [{"cast": {"field": "position_sec", "type": "long"}}, {"drop": "legacy"}]
    spec = StreamSpec.model_validate(raw)
    at = datetime(2026, 10, 1, 6, 10, tzinfo=UTC)
    records = [v1("whole", at, position_sec=12.0, legacy="x"), v1("half", at, position_sec=12.5, legacy="x")]
    deliver(spec, datetime(2026, 10, 1, 6, tzinfo=UTC), records)
    ingest_window(spark, spec, archive_for(spec), ReadPlan.for_range(spec, DAY1, DAY2))
    rows = events(spark, spec)
    assert set(rows) == {"whole"} and "legacy" not in rows["whole"]
    assert rows["whole"]["position_sec"] == 12 and rows["whole"]["device_type"] == "tv"
    lossy = quarantined(spark, spec)["2026/10/01/06/part-0001.jsonl.gz:2"]
    assert lossy["reason"] == "invalid_field" and lossy["detail"] == "position_sec"


@pytest.mark.parametrize(
    ("time_format", "good", "bad"),
    [
        ("epoch_seconds", {"int": 1_790_000_000, "frac": 1_790_000_000.123456, "text": " 1790000000.5 ",
                           "exp": 1.79e9},
         {"nanos": "1790000000.1234567", "word": "soon", "hex": "0x6AB"}),
        ("epoch_micros", {"int": 1_790_000_000_123_456, "text": "1790000000000001"},
         {"frac": 1_790_000_000_000_000.5, "too_big": "1" * 19}),
    ],
)  # fmt: skip
def test_epoch_seconds_and_micros_are_exact_and_anything_else_is_unparseable(
    tmp_path, spark, time_format, good, bad
):
    raw = demo_spec_data("playback")
    raw["name"] = f"case_{next(_names)}"
    raw["archive"]["location"] = str(tmp_path / "archive")
    raw["first_partition"] = "2026-09-01"
    raw["schema_versions"][1]["event_time_format"] = time_format
    spec = StreamSpec.model_validate(raw)
    hour = datetime(2026, 9, 21, 13, tzinfo=UTC)  # 1_790_000_000 s is 2026-09-21 13:33:20 UTC
    records = [v2(name, hour) | {"event_time": value} for name, value in (good | bad).items()]
    deliver(spec, hour, [json.dumps(r) for r in records])
    ingest_window(
        spark,
        spec,
        archive_for(spec),
        ReadPlan.for_range(spec, hour.replace(hour=0), hour.replace(hour=0) + timedelta(days=1)),
    )
    rows = events(spark, spec)
    scale = {"epoch_seconds": 1_000_000, "epoch_micros": 1}[time_format]
    from decimal import Decimal

    for name, value in good.items():
        micros = int(Decimal(str(value).strip()) * scale)
        expected = datetime(1970, 1, 1) + timedelta(microseconds=micros)
        assert rows[name]["event_time"] == expected, name
    held = {r["event_id"]: r["reason"] for r in quarantined(spark, spec).values()}
    assert held == dict.fromkeys(bad, "unparseable_event_time")


@pytest.mark.both_spark_lines  # the cast's quirks are the Spark line's own
def test_iso_times_are_read_with_or_without_a_zone_and_anything_else_is_unparseable(tmp_path, spark):
    """A final `Z` takes a shorter path than the other zones (`parse._iso_timestamp`): the same instants."""
    raw = demo_spec_data("playback")
    raw["name"] = f"case_{next(_names)}"
    raw["archive"]["location"] = str(tmp_path / "archive")
    raw["first_partition"] = "2026-09-01"
    spec = StreamSpec.model_validate(raw)
    good = {
        "z": "2026-09-21T13:33:20Z",
        "z_micros": "2026-09-21T13:33:20.123456Z",
        "z_spaces": " 2026-09-21T13:33:20Z ",
        "z_space": "2026-09-21 13:33:20.5Z",
        "no_zone": "2026-09-21T13:33:20",
        "utc": "2026-09-21T13:33:20+00:00",
        "east": "2026-09-21T15:33:20+02:00",
        "west": "2026-09-21T08:03:20.25-05:30",
        "compact": "2026-09-21T15:33:20+0200",
    }
    bad = {"date": "2026-09-21", "two_z": "2026-09-21T13:33:20ZZ", "spaced_z": "2026-09-21T13:33:20 Z",
           "hour_25": "2026-09-21T25:00:00Z", "day_31": "2026-09-31T13:00:00Z", "only_z": "Z"}  # fmt: skip
    hour = datetime(2026, 9, 21, 13, tzinfo=UTC)
    records = [v1(name, hour, event_time=value) for name, value in (good | bad).items()]
    deliver(spec, hour, [json.dumps(r) for r in records])
    ingest_window(
        spark,
        spec,
        archive_for(spec),
        ReadPlan.for_range(spec, hour.replace(hour=0), hour.replace(hour=0) + timedelta(days=1)),
    )
    rows = events(spark, spec)
    for name, value in good.items():
        expected = datetime.fromisoformat(value.strip())
        expected = expected.astimezone(UTC).replace(tzinfo=None) if expected.tzinfo else expected
        assert rows[name]["event_time"] == expected, name
    held = {r["event_id"]: r["reason"] for r in quarantined(spark, spec).values()}
    assert held == dict.fromkeys(bad, "unparseable_event_time")


@pytest.mark.both_spark_lines  # the cast's quirks are the Spark line's own
def test_the_short_path_for_a_final_z_reads_what_sparks_cast_reads(spark):
    """`_iso_timestamp` against Spark's cast of the trimmed text, on a grid of ISO-like text (valid, out of
    range, zones of every form, Spark's quirks such as `13:33Z`, which it does not read)."""
    from pyspark.sql.types import TimestampType

    from backfill_platform.pipeline.events.parse import _ISO_DATETIME, _iso_timestamp

    dates = ["2026-09-21", "2026-9-21", "0001-01-01", "9999-12-31", "2024-02-29", "2026-02-29", "2026-13-01"]
    times = ["13:33", "13:33:20", "13:33:20.5", "13:33:20.123456", "13:33:20.123456789", "1:2:3", "13:33:",
             "13", "24:00:00", "23:59:60", "13:33:20.", "13:3"]  # fmt: skip
    zones = ["Z", "ZZ", " Z", "Z ", "Z\t", "Z\n", "", "+00:00", "+02", "+0200", "-05:30", "UTC", "z"]
    grid = [
        f"{pad}{d}{sep}{t}{z}"
        for d in dates
        for sep in "T "
        for t in times
        for z in zones
        for pad in ("", " ", "\t", "\n")  # Spark's cast trims any whitespace, `F.trim` spaces only
    ]
    grid += ["Z", " Z", "2026Z", "2026-09Z", "2026-09-21Z", "2026-09-21TZ"]
    text = F.col("t")
    spark_cast = F.when(text.rlike(_ISO_DATETIME), F.trim(text).cast(TimestampType()))
    ours = F.when(text.rlike(_ISO_DATETIME), _iso_timestamp(text))
    read = spark.createDataFrame([(t,) for t in grid], "t string").select(
        "t", spark_cast.cast("string").alias("spark"), ours.cast("string").alias("ours")
    )
    rows = read.collect()
    assert len(rows) == len(grid) and sum(r["ours"] is not None for r in rows) > 500
    assert [(r["t"], r["spark"], r["ours"]) for r in rows if r["spark"] != r["ours"]] == []


def test_the_parse_refuses_a_session_in_another_zone(tmp_path, spark):
    """ISO times without a zone, and `Z` times on the short path, are read in the session's zone."""
    from backfill_platform.pipeline.events.parse import parse_records

    other = spark.newSession()
    other.conf.set("spark.sql.session.timeZone", "America/New_York")
    with pytest.raises(ValueError, match="time zone must be UTC, not 'America/New_York'"):
        parse_records(other.range(1), stream_in(tmp_path))


def test_a_small_day_passes_on_the_per_day_floor_and_a_large_one_is_held_to_the_ratio(tmp_path, spark):
    from backfill_platform.pipeline.events.checks import quarantine_ratio_check

    raw = demo_spec_data("playback")
    raw["name"] = f"case_{next(_names)}"
    raw["archive"]["location"] = str(tmp_path / "archive")
    raw["max_quarantined_per_day"] = 2
    spec = StreamSpec.model_validate(raw)
    small = [v1(f"s{i}", DAY1 + timedelta(hours=5, seconds=i)) for i in range(95)] + ["{truncated"]
    large = [v1(f"l{i}", DAY2 + timedelta(hours=5, seconds=i)) for i in range(200)] + ["{bad"] * 3
    deliver(spec, DAY1 + timedelta(hours=5), small)
    deliver(spec, DAY2 + timedelta(hours=5), large)
    result = ingest_window(spark, spec, archive_for(spec), ReadPlan.for_range(spec, DAY1, DAY3))
    verdicts = {v.partition: v for v in quarantine_ratio_check(spec, result)}
    small_day, large_day = verdicts[DAY1.date().isoformat()], verdicts[DAY2.date().isoformat()]
    assert (small_day.metadata["read"], small_day.metadata["quarantined"]) == (96, 1)
    assert small_day.passed and small_day.metadata["passed_by"] == "max_quarantined_per_day"
    assert (large_day.metadata["read"], large_day.metadata["quarantined"]) == (203, 3)
    assert not large_day.passed and large_day.metadata["passed_by"] == "none"
    # The ratio alone (the default floor of 0) holds the small day back too.
    strict = spec.model_copy(update={"max_quarantined_per_day": 0})
    assert not {v.partition: v for v in quarantine_ratio_check(strict, result)}[small_day.partition].passed
