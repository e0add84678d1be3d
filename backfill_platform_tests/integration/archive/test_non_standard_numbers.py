"""Non-standard numbers (`NaN`, `Infinity`, `-Infinity`), as Python producers write them.

One small archive of such lines is ingested three times, once per `non_standard_numbers` setting
(`quarantine`, the default; `missing`; `keep`), and every line's outcome and detail are asserted; then the
session's generated archive, rewritten as a Python producer would write it (NaN for a missing position in
15% of the records), goes through events, the demo dataset and production: with `missing` production equals
an independent computation, with the default every day is held back and the check names the reason.
"""

from __future__ import annotations

import gzip
import json
import math
import shutil
import zlib
from collections import defaultdict
from datetime import date, timedelta
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError
from pyspark.sql import functions as F

from backfill_platform.devtools.generator.truth import HOUR_MS, classify_line, ms_to_day, read_archive
from backfill_platform.operations.plan import build_plan, plan_summary
from backfill_platform.pipeline.archive.stream_archive import archive_for
from backfill_platform.pipeline.events.assets import build_events_asset
from backfill_platform.pipeline.events.ingest import ingest_window
from backfill_platform.pipeline.hour_mapping import ReadPlan
from backfill_platform.pipeline.names import events_table, production_table, quarantine_table
from backfill_platform.specs.durations import midnight
from backfill_platform.specs.stream import StreamSpec
from backfill_platform_tests.support.datasets import dataset, promotion_chain, run
from backfill_platform_tests.support.session import START
from backfill_platform_tests.support.streams import stream_copy

# Archives in pytest's temporary folders: the operator's setting allows them (BACKFILL_PLATFORM_ARCHIVE_ROOTS).
pytestmark = pytest.mark.usefixtures("archive_roots_in_tmp")

HOUR = midnight(START) + timedelta(hours=9)
AT = (HOUR + timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
OK = f'"event_time":"{AT}","race":"r","score":1.5,"laps":3'
NSN, WRITTEN = "non_standard_number", "written"

# event id -> (line, outcome under quarantine / null / keep). An outcome is `written` or a reason.
LINES: dict[str, tuple[str, tuple[str, str, str]]] = {
    "ok": ('{"event_id":"ok",' + OK + "}", (WRITTEN,) * 3),
    "nan_in_optional_field": (
        f'{{"event_id":"nan_in_optional_field","event_time":"{AT}","race":NaN,"score":1.5}}',
        (NSN, WRITTEN, "invalid_field"),
    ),
    "infinity_in_double_field": (
        f'{{"event_id":"infinity_in_double_field","event_time":"{AT}","score":Infinity}}',
        (NSN, WRITTEN, WRITTEN),
    ),
    "minus_infinity": (f'{{"event_id":"minus_infinity","event_time":"{AT}","score":-Infinity}}', (NSN, WRITTEN, WRITTEN)),
    "plus_infinity": (f'{{"event_id":"plus_infinity","event_time":"{AT}","score": +Infinity }}', (NSN, WRITTEN, WRITTEN)),
    "nan_in_double_field": (f'{{"event_id":"nan_in_double_field","event_time":"{AT}","score":NaN}}', (NSN, WRITTEN, WRITTEN)),
    "nan_in_long_field": (
        f'{{"event_id":"nan_in_long_field","event_time":"{AT}","laps":NaN}}',
        (NSN, WRITTEN, "invalid_field"),
    ),
    "nan_undeclared": (f'{{"event_id":"nan_undeclared","event_time":"{AT}","extra":NaN}}', (NSN, WRITTEN, WRITTEN)),
    "nan_in_array": (
        f'{{"event_id":"nan_in_array","event_time":"{AT}","race":[1,NaN]}}',
        (NSN, "invalid_field", "invalid_field"),
    ),
    "nan_event_time": ('{"event_id":"nan_event_time","event_time":NaN}', (NSN, "unparseable_event_time", "unparseable_event_time")),
    # Both defects: never read, and the detail keeps "text after the JSON object".
    "nan_and_text_after": (
        f'{{"event_id":"nan_and_text_after","event_time":"{AT}","score":NaN}} trailing',
        ("malformed_json",) * 3,
    ),
    "nan_concatenated": (
        f'{{"event_id":"nan_concatenated","event_time":"{AT}","score":NaN}}{{"event_id":"b","event_time":"{AT}"}}',
        ("multiple_json_values",) * 3,
    ),
    "nan_as_string": ('{"event_id":"nan_as_string",' + OK.replace('"r"', '"NaN"') + "}", (WRITTEN,) * 3),
    "overflow_is_not_infinity": (
        f'{{"event_id":"overflow_is_not_infinity","event_time":"{AT}","score":1e400}}',
        ("invalid_field",) * 3,
    ),
    "lowercase_nan": (f'{{"event_id":"lowercase_nan","event_time":"{AT}","score":nan}}', ("malformed_json",) * 3),
}  # fmt: skip
SETTINGS = ("quarantine", "missing", "keep")


def _spec(name: str, location: Path, setting: str) -> StreamSpec:
    return StreamSpec.model_validate(
        {
            "name": name,
            "archive": {"location": str(location), "layout": "%Y/%m/%d/%H"},
            "event_id_field": "event_id",
            "event_time": {"field": "event_time"},
            "allowed_lateness": "2h",
            "first_partition": START.isoformat(),
            "non_standard_numbers": setting,
            "schema_versions": [
                {
                    "version": 1,
                    "match": {"field": "v", "missing": True},
                    "fields": {"race": "string", "score": "double", "laps": "long"},
                }
            ],
        }
    )


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("python_producer")
    folder = root / HOUR.strftime("%Y/%m/%d/%H")
    folder.mkdir(parents=True)
    text = "".join(line + "\n" for line, _ in LINES.values())
    (folder / "part-0000.jsonl.gz").write_bytes(gzip.compress(text.encode(), mtime=0))
    return root


@pytest.fixture(scope="module", params=SETTINGS)
def ingested(request, spark, archive):
    spec = _spec(f"python_producer_{request.param}", archive, request.param)
    result = ingest_window(
        spark,
        spec,
        archive_for(spec),
        ReadPlan.for_range(spec, midnight(START), midnight(START) + timedelta(days=1)),
    )
    events = {r["event_id"]: r.asDict() for r in spark.table(events_table(spark, spec)).collect()}
    held = {r["line"]: r.asDict() for r in spark.table(quarantine_table(spark, spec)).collect()}
    return request.param, result, events, held


def test_each_line_has_the_outcome_its_setting_says(ingested):
    setting, result, events, held = ingested
    column = SETTINGS.index(setting)
    got = {
        event_id: WRITTEN if event_id in events and line not in held else held[line]["reason"]
        for event_id, (line, _) in LINES.items()
    }
    assert got == {event_id: outcomes[column] for event_id, (_, outcomes) in LINES.items()}
    (day,) = [p for p in result.partitions.values() if p.records]
    assert day.records == len(LINES) == day.written + day.duplicates + day.quarantined_total
    assert day.quarantined[NSN] == sum(outcomes[column] == NSN for _, outcomes in LINES.values())


def test_the_detail_names_the_token_and_the_field(ingested):
    setting, _, _, held = ingested
    detail = {held[line]["event_id"]: held[line]["detail"] for line, _ in LINES.values() if line in held}
    after = detail["nan_and_text_after"]
    assert after.startswith("text after the JSON object") and 'NaN in field "score"' in after
    if setting == "quarantine":
        assert detail["nan_in_optional_field"] == 'NaN in field "race"'
        assert detail["infinity_in_double_field"] == 'Infinity in field "score"'
        assert detail["minus_infinity"] == '-Infinity in field "score"'
        assert detail["nan_undeclared"] == 'NaN in field "extra"'
        assert detail["nan_in_array"] == "NaN inside an array"
        assert detail["nan_event_time"] == 'NaN in field "event_time"'
    else:
        assert detail["nan_in_array"] == "race"  # invalid_field names the field
        assert detail["nan_event_time"] == "NaN"


def test_null_reads_the_token_as_missing_and_keep_stores_it_in_doubles(ingested):
    setting, _, events, _ = ingested
    if setting == "missing":
        assert (
            events["nan_in_optional_field"]["race"] is None
            and events["nan_in_optional_field"]["score"] == 1.5
        )
        for event_id in ("infinity_in_double_field", "minus_infinity", "nan_in_double_field"):
            assert events[event_id]["score"] is None
        assert events["nan_in_long_field"]["laps"] is None
    if setting == "keep":
        assert events["infinity_in_double_field"]["score"] == math.inf
        assert events["plus_infinity"]["score"] == math.inf
        assert events["minus_infinity"]["score"] == -math.inf
        assert math.isnan(events["nan_in_double_field"]["score"])
    if setting != "quarantine":
        assert events["nan_as_string"]["race"] == "NaN" and events["ok"]["score"] == 1.5


# --- a Python producer's archive, through events, the demo dataset and production ----------------------

D2, D3 = START + timedelta(days=1), START + timedelta(days=2)
NAN_SHARE = 15  # percent of the records whose position is missing, written as NaN


def _missing_position(event_id: str) -> bool:
    return zlib.crc32(event_id.encode()) % 100 < NAN_SHARE


def _as_python_writes_it(text: str) -> str:
    """The line as a Python producer writes a record whose position is missing (`json.dumps` of NaN)."""
    try:
        record = json.loads(text)
    except ValueError:
        return text
    if not isinstance(record, dict) or not isinstance(record.get("event_id"), str):
        return text
    if "position_sec" not in record or not _missing_position(record["event_id"]):
        return text
    return json.dumps({**record, "position_sec": math.nan}, separators=(",", ":"))


@pytest.fixture(scope="module")
def python_archive(data_dir: Path, playback, truth) -> Path:
    """The session's archive as a Python producer would have written it, under `archive/python_playback`."""
    root = stream_copy(playback, data_dir, "python_playback").archive.location
    root = data_dir / root
    for path in sorted(root.rglob("*.jsonl.gz")):
        lines = gzip.decompress(path.read_bytes()).decode("utf-8").split("\n")
        path.write_bytes(gzip.compress("\n".join(_as_python_writes_it(x) for x in lines).encode(), mtime=0))
    return root


def _independent_views(root: Path, spec: StreamSpec, days: set[str]) -> dict[tuple, tuple]:
    """views_per_title computed in plain Python from the archive's lines (NaN read as a missing
    position): the earliest admissible copy of each event id per day, as the generator's truth rules say."""
    lateness, skew = (
        spec.allowed_lateness // timedelta(milliseconds=1),
        spec.clock_skew // timedelta(milliseconds=1),
    )
    kept: dict[tuple[str, str], tuple] = {}
    for line in read_archive(root):
        reason, record, t = classify_line(line.text)
        if reason is not None or not line.hb_ms - lateness <= t < line.hb_ms + HOUR_MS + skew:
            continue
        day = ms_to_day(t)
        copy = ((line.hb_ms, line.file_name, line.line_no), t, record)
        if day in days and (
            (record["event_id"], day) not in kept or copy[0] < kept[record["event_id"], day][0]
        ):
            kept[record["event_id"], day] = copy
    buckets: dict[tuple, list] = defaultdict(lambda: [0, 0, set()])
    for (_, day), (_, t, record) in kept.items():
        kind, position = record["event_type"], record.get("position_sec")
        if kind not in ("start", "stop"):
            continue
        bucket = buckets[date.fromisoformat(day), (t % (24 * HOUR_MS)) // HOUR_MS, record["title_id"]]
        if kind == "start":
            bucket[0] += 1
            bucket[2].add(record["user_id"])
        elif position is not None and not math.isnan(position):
            bucket[1] += position
    return {key: (views, watch, len(viewers)) for key, (views, watch, viewers) in buckets.items()}


def test_null_promotes_what_an_independent_reader_computes(spark, spark_resource, playback, python_archive):
    stream = stream_copy(
        playback, python_archive.parents[1], "python_playback", non_standard_numbers="missing"
    )
    views = dataset("views_python_producer", source_stream=stream.name)
    result = run(spark_resource, [build_events_asset(stream), *promotion_chain(views, stream)], D2, D3)
    assert result.success, [c.metadata for c in result.get_asset_check_evaluations() if not c.passed]
    rows = spark.table(production_table(spark, views)).collect()
    got = {
        (r.event_date, r.event_hour, r.title_id): (r.views, r.watch_seconds, r.unique_viewers) for r in rows
    }
    want = _independent_views(python_archive, stream, {D2.isoformat(), D3.isoformat()})
    assert got == want and len(got) > 100
    nulls = spark.table(events_table(spark, stream)).where(F.col("position_sec").isNull()).count()
    assert nulls > 0.1 * spark.table(events_table(spark, stream)).count()


def test_by_default_the_days_are_held_back_naming_the_reason(spark, spark_resource, playback, python_archive):
    strict = python_archive.parent / "python_playback_strict"
    if not strict.exists():
        shutil.copytree(python_archive, strict)
    stream = stream_copy(playback, python_archive.parents[1], strict.name)
    views = dataset("views_python_strict", source_stream=stream.name)
    result = run(spark_resource, [build_events_asset(stream), *promotion_chain(views, stream)], D2, D3)
    assert not result.success
    ratio = [c for c in result.get_asset_check_evaluations() if c.check_name == "quarantine_ratio"]
    failed = {c.partition: c.metadata for c in ratio if not c.passed}
    assert set(failed) == {D2.isoformat(), D3.isoformat()}
    for metadata in failed.values():
        assert metadata["quarantined_non_standard_number"].value > 0.1 * metadata["read"].value
        sample = metadata["sample_non_standard_number"].value
        assert 'NaN in field "position_sec"' in sample and '"position_sec":NaN' in sample
    assert not spark.catalog.tableExists(production_table(spark, views)) or (
        spark.table(production_table(spark, views)).count() == 0
    )


def test_plan_says_the_archive_holds_them_and_which_setting_reads_them(playback, python_archive):
    strict = stream_copy(playback, python_archive.parents[1], python_archive.name)
    summary = "\n".join(plan_summary(build_plan(strict, [], D2, D3)))
    assert "sampled records hold non-standard numbers" in summary
    assert "NaN in 'position_sec'" in summary and "non_standard_numbers: missing" in summary
    reading = stream_copy(
        playback, python_archive.parents[1], python_archive.name, non_standard_numbers="missing"
    )
    assert "read with `non_standard_numbers: missing`" in "\n".join(
        plan_summary(build_plan(reading, [], D2, D3))
    )
    assert "non-standard" not in "\n".join(plan_summary(build_plan(playback, [], D2, D3)))


def test_a_bare_yaml_null_is_refused_naming_the_setting(tmp_path):
    spec = _spec("yaml_null", tmp_path, "missing")
    raw = spec.model_dump()
    assert StreamSpec.model_validate(raw) == spec  # a version's unset override survives the round trip
    with pytest.raises(ValidationError, match="write `missing`"):
        StreamSpec.model_validate({**raw, "non_standard_numbers": yaml.safe_load("x: null")["x"]})
    version = {**raw["schema_versions"][0], "non_standard_numbers": "keep"}
    keep = StreamSpec.model_validate({**raw, "schema_versions": [version]})
    assert keep.number_reading(keep.latest) == "keep" and spec.number_reading(spec.latest) == "missing"
