"""The bad-input corpus (`devtools/generator/corpus.py`) through `ingest_window`: nothing crashes, is lost or altered.

The corpus is ingested once (two event days) for a copy of the playback stream under its own name; each
test reads what that run committed. What each defect must become, and why, is in the corpus' docstring.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta

import pytest
from pyspark.sql import functions as F

from backfill_platform.devtools.generator.corpus import DAY1, DAY2, INVALID_UTF8, write_corpus
from backfill_platform.pipeline.archive.stream_archive import archive_for
from backfill_platform.pipeline.events.checks import reconciliation_check
from backfill_platform.pipeline.events.ingest import ingest_window
from backfill_platform.pipeline.hour_mapping import ReadPlan
from backfill_platform.pipeline.names import events_table, quarantine_table

STREAM = "playback_corpus"
START, END = DAY1, DAY2 + timedelta(days=1)
# The corpus gives the same outcomes and reasons on every Spark line (`make test-other-spark`).
pytestmark = pytest.mark.both_spark_lines


@pytest.fixture(scope="module")
def corpus(data_dir):
    return write_corpus(data_dir / "archive" / STREAM)


@pytest.fixture(scope="module")
def stream(playback, corpus):
    archive = playback.archive.model_copy(update={"location": f"archive/{STREAM}"})
    return playback.model_copy(update={"name": STREAM, "archive": archive})


@pytest.fixture(scope="module")
def ingested(spark, stream, corpus):
    return ingest_window(spark, stream, archive_for(stream), ReadPlan.for_range(stream, START, END))


@pytest.fixture(scope="module")
def quarantine(spark, stream, ingested) -> list[dict]:
    return [r.asDict() for r in spark.table(quarantine_table(spark, stream)).collect()]


@pytest.fixture(scope="module")
def events(spark, stream, ingested):
    return spark.table(events_table(spark, stream))


def test_the_corpus_has_every_defect_of_the_issue(corpus):
    assert set(corpus.defects) >= {
        "truncated_gzip", "zero_byte_file", "empty_gzip", "malformed_json", "missing_event_id",
        "empty_event_id", "missing_event_time", "unparseable_event_time", "far_future_time",
        "before_first_partition", "unknown_schema_version", "conflicting_duplicate",
        "conflicting_duplicate_across_midnight", "same_file_two_names", "invalid_utf8", "long_line", "bom",
        "crlf", "nul_byte", "wrong_type_string", "wrong_type_overflow", "wrong_type_fraction",
        "uncompressed_among_gzip", "outside_hour_layout", "date_only_time", "bare_year_time",
        "concatenated_records", "text_after_object", "braces_in_string", "nan_in_optional_field",
        "nan_in_long_field", "infinity_in_long_field", "nan_and_text_after_object",
    }  # fmt: skip


def test_every_line_of_every_listed_file_is_counted_once(ingested, corpus, spark, stream):
    assert sum(p.records for p in ingested.partitions.values()) == corpus.lines
    for day, p in ingested.partitions.items():
        assert p.records == p.written + p.duplicates + p.quarantined_total, day
    written = {
        r["day"].isoformat(): r["count"]
        for r in spark.table(events_table(spark, stream))
        .groupBy(F.to_date("event_time").alias("day"))
        .count()
        .collect()
    }
    verdicts = reconciliation_check(spark, stream, ingested, written, START, END)
    assert verdicts and all(v.passed for v in verdicts), [v.metadata for v in verdicts]


def test_each_outcome_has_its_known_count(ingested, corpus):
    got = Counter()
    for p in ingested.partitions.values():
        got["written"] += p.written
        got["duplicate"] += p.duplicates
        got.update({reason: n for reason, n in p.quarantined.items() if n})
    assert got == corpus.outcomes


def test_records_before_the_first_partition_are_counted_in_it(ingested, quarantine):
    assert ingested.partitions[DAY1.date().isoformat()].quarantined["before_first_partition"] == 2
    early = [q for q in quarantine if q["reason"] == "before_first_partition"]
    assert {q["event_id"] for q in early} == {"early-1", "early-3"}
    assert all(q["attributed_time"] == datetime(2026, 10, 1) for q in early)


def test_one_row_per_event_id_across_midnight_and_losing_payloads_kept(events, quarantine):
    assert events.count() == events.select("event_id").distinct().count()
    midnight = events.where(F.col("event_id") == "midnight").collect()
    assert [r["event_time"] for r in midnight] == [datetime(2026, 10, 1, 23, 59, 30)]
    losers = {q["event_id"]: q for q in quarantine if q["reason"] == "conflicting_duplicate"}
    assert set(losers) == {"conf", "midnight"}
    assert '"position_sec":99' in losers["conf"]["line"]
    assert losers["conf"]["detail"] == "kept 2026/10/01/06/dups-0001.jsonl.gz:2"
    assert losers["midnight"]["attributed_time"].date() == DAY2.date()  # its own event day
    assert losers["midnight"]["detail"] == "kept 2026/10/01/23/midnight-0001.jsonl.gz:1"


def test_every_file_under_the_prefix_is_read_or_reported_unlisted(ingested, corpus):
    on_disk = {str(p.relative_to(corpus.root)) for p in corpus.root.rglob("*") if p.is_file()}
    assert {u.name: u.lines for u in ingested.unlisted} == corpus.unlisted
    assert {f.name for f in ingested.files} | set(corpus.unlisted) == on_disk
    assert all(u.why for u in ingested.unlisted)


def test_values_are_quarantined_not_altered(events, quarantine):
    by_id = {q["event_id"]: q for q in quarantine if q["event_id"]}
    for event_id in ("type-string", "type-overflow", "type-fraction"):
        assert by_id[event_id]["reason"] == "invalid_field" and by_id[event_id]["detail"] == "position_sec"
    for event_id in ("date-only", "bare-year", "epoch-overflow", "no-time", "bad-time"):
        assert by_id[event_id]["reason"] == "unparseable_event_time", event_id
    ids = {r["event_id"] for r in events.select("event_id").collect()}
    assert not ids & {"type-fraction", "date-only", "bare-year", "latin1", "nul-1", "nul-2", "big"}
    # CRLF, BOM and uncompressed files are read unchanged.
    assert {"crlf-1", "crlf-2", "bom-1", "bom-2", "plain-1", "plain-2", "plain-3"} <= ids
    assert events.where(F.col("user_id").contains("\r") | F.col("event_id").contains("\ufeff")).count() == 0


def test_a_line_of_several_records_is_quarantined_whole_never_read_as_its_first(events, quarantine):
    ids = {r["event_id"] for r in events.select("event_id").collect()}
    assert not ids & {"two-a", "two-b", "spaced-a", "spaced-b", "after"}
    assert "brace" in ids
    several = {q["_line_number"]: q for q in quarantine if q["reason"] == "multiple_json_values"}
    assert len(several) == 2
    for q in several.values():
        assert q["line"].count('"event_id"') == 2 and q["detail"].startswith("2 JSON values on one line")
        assert q["_source_file"] == "2026/10/01/05/defects.jsonl.gz"
    (after,) = [q for q in quarantine if q["line"] and q["line"].endswith("]x}")]
    assert after["reason"] == "malformed_json" and after["detail"].startswith("text after the JSON object")


def test_non_standard_numbers_are_named_with_their_field(events, quarantine):
    by_id = {q["event_id"]: q for q in quarantine if q["event_id"]}
    assert {k: (by_id[k]["reason"], by_id[k]["detail"]) for k in ("nan-opt", "nan-long", "inf-long")} == {
        "nan-opt": ("non_standard_number", 'NaN in field "country"'),
        "nan-long": ("non_standard_number", 'NaN in field "position_sec"'),
        "inf-long": ("non_standard_number", '-Infinity in field "position_sec"'),
    }
    after = by_id["nan-after"]
    assert after["reason"] == "malformed_json"
    assert (
        after["detail"].startswith("text after the JSON object")
        and 'NaN in field "country"' in after["detail"]
    )
    ids = {r["event_id"] for r in events.select("event_id").collect()}
    assert not ids & {"nan-opt", "nan-long", "inf-long", "nan-after"}


def test_non_utf8_bytes_are_kept_exactly(quarantine, events):
    (row,) = [q for q in quarantine if q["reason"] == "invalid_utf8"]
    assert bytes(row["raw_bytes"]) == INVALID_UTF8
    assert "\\xf6" in row["line"]
    assert not any("\ufffd" in (q["line"] or "") for q in quarantine)
    assert events.where(F.col("user_id").contains("\ufffd")).count() == 0


def test_damaged_files_are_named_in_quarantine(ingested, quarantine, events):
    (truncated,) = [q for q in quarantine if q["reason"] == "unreadable_file"]
    assert truncated["_source_file"] == "2026/10/01/03/truncated.jsonl.gz" and truncated["_line_number"] == 6
    assert "after 5 lines" in truncated["detail"]
    assert events.where(F.col("event_id").startswith("trunc-")).count() == 5
    (big,) = [q for q in quarantine if q["reason"] == "line_too_long"]
    assert big["detail"].startswith("5000") and len(big["line"]) <= 1024


def test_a_rerun_is_identical(spark, stream, ingested, quarantine):
    again = ingest_window(spark, stream, archive_for(stream), ReadPlan.for_range(stream, START, END))
    assert {d: vars(p) for d, p in again.partitions.items()} == {
        d: vars(p) for d, p in ingested.partitions.items()
    }
    rows = [r.asDict() for r in spark.table(quarantine_table(spark, stream)).collect()]
    key = lambda q: (q["_source_file"], q["_line_number"])  # noqa: E731
    assert sorted(rows, key=key) == sorted(quarantine, key=key)
