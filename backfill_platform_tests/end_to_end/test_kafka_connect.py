"""Kafka Connect S3 sink archives: offsets kept on every event, and completeness proven by contiguous
offsets per Kafka partition instead of by ingestion hours (which a quiet stream leaves empty).

The archive (`devtools/generator/kafka_connect.py`) spreads two days of playback events over three
Kafka partitions, with a schema change, late arrivals and producer retries; its truth records each
event's partition and offset. Expectations come from that truth and the files written, never from the
platform's output.
"""

from __future__ import annotations

import json
import shutil
from datetime import timedelta
from pathlib import Path

import pytest

from backfill_platform.components.registry import demo_spec_data
from backfill_platform.devtools.generator.kafka_connect import LAYOUT, generate_kafka_connect_archive
from backfill_platform.operations.plan import build_plan
from backfill_platform.pipeline.archive.kafka_connect import kafka_file, offset_problems
from backfill_platform.pipeline.events.assets import build_events_asset
from backfill_platform.pipeline.hour_mapping import ReadWindow
from backfill_platform.pipeline.names import events_table
from backfill_platform.specs.durations import day_bounds
from backfill_platform.specs.stream import StreamSpec
from backfill_platform_tests.support.datasets import run, settled_by_day
from backfill_platform_tests.support.kafka_connect import assert_events_are_the_truth
from backfill_platform_tests.support.moto import MotoServer, aws
from backfill_platform_tests.support.session import START

# Archives in moto's buckets: the operator's setting allows them (BACKFILL_PLATFORM_ARCHIVE_S3_BUCKETS).
pytestmark = pytest.mark.usefixtures("s3_archive_buckets")

D2 = START + timedelta(days=1)
BUCKET = "kafka-connect-sink"


def kafka_spec(name: str, location: str, fmt: str, **archive) -> StreamSpec:
    raw = demo_spec_data("playback")
    raw["name"] = name
    raw["archive"] = {"location": location, "layout": LAYOUT, "format": fmt, "compression": "none",
                      "kafka_connect": {"topic": "playback", **archive}}  # fmt: skip
    return StreamSpec.model_validate(raw)


def test_offsets_name_the_first_gap_and_are_counted_across_overlaps():
    names = [
        "t/p+0+0000000000.json",
        "t/p+0+0000000040.json",
        "t/p+0+0000000090.json",
        "t/p+1+0000000007.json",
    ]
    records = dict.fromkeys(names, 40)
    assert offset_problems(names, records) == [
        "partition 0: offsets 80-89 missing between files t/p+0+0000000040.json and t/p+0+0000000090.json"
    ]
    # A rewrite that overlaps (at-least-once after a rebalance) is not a gap; other names are problems.
    overlapping = {"a+2+0000000000.json": 50, "a+2+0000000030.json": 10, "a+2+0000000050.json": 1}
    assert offset_problems(overlapping, overlapping) == []
    assert offset_problems(["x.json", "b+0+5.json"], {"b+0+5.json": 1}, topic="a") == [
        "file b+0+5.json: topic 'b', not 'a'",
        "file x.json: not named <topic>+<partition>+<startOffset>.<ext>",
    ]
    assert kafka_file("topics/pb/year=2026/hour=01/pb+12+0000001200.snappy.parquet").partition == 12


@pytest.fixture(scope="module")
def local_archive(data_dir: Path):
    root = data_dir / "archive" / "kc_json"
    shutil.rmtree(root, ignore_errors=True)
    truth = generate_kafka_connect_archive(root, START, 2, 300, fmt="json")
    return kafka_spec("kc_json", "archive/kc_json", "jsonl"), truth, root


def test_a_complete_kafka_connect_archive_settles_though_hours_are_empty(
    spark, spark_resource, local_archive
):
    spec, truth, _root = local_archive
    result = run(spark_resource, [build_events_asset(spec)], START, D2)
    assert result.success
    settled = settled_by_day(result)
    assert all(c.passed for c in settled.values()) and len(settled) == 2
    assert settled[START.isoformat()].metadata["gaps"].value == "none"
    # The hour rule would have failed: the window has hours without any file.
    hours = {f.split("/hour=")[0] + "/hour=" + f.split("/hour=")[1][:2] for f, *_ in truth.files}
    read = ReadWindow.of(spec, *day_bounds(START))
    low, high = read.low, read.high
    assert sum(1 for h in range(int((high - low).total_seconds() // 3600))
               if (low + timedelta(hours=h)).strftime(LAYOUT) not in hours) > 0  # fmt: skip
    assert_events_are_the_truth(spark, spec, truth)


def test_a_missing_file_is_refused_as_unsettled_naming_partition_and_offsets(
    spark, spark_resource, local_archive, data_dir
):
    spec, truth, root = local_archive
    gap = spec.model_copy(
        update={
            "name": "kc_json_gap",
            "archive": spec.archive.model_copy(update={"location": "archive/kc_json_gap"}),
        }
    )
    target = data_dir / "archive" / "kc_json_gap"
    shutil.copytree(root, target, dirs_exist_ok=True)
    # A file of partition 1 ingested around noon of the first day never arrived: only that day reads it.
    ones = [f for f in truth.files if f[1] == 1]
    noon = START.strftime("year=%Y/month=%m/day=%d/hour=12")
    i = next(k for k in range(1, len(ones) - 1) if ones[k][0] >= noon)
    lost, before, after = ones[i], ones[i - 1], ones[i + 1]
    (target / lost[0]).unlink()
    expected = f"partition 1: offsets {lost[2]}-{lost[2] + lost[3] - 1} missing between files {before[0]} and {after[0]}"
    plan = build_plan(gap, [], START, D2 + timedelta(days=1))
    assert [d.offset_gaps for d in plan.partitions] == [[expected], []]

    result = run(spark_resource, [build_events_asset(gap)], START, D2)
    settled = settled_by_day(result)
    assert not settled[START.isoformat()].passed and settled[D2.isoformat()].passed
    assert settled[START.isoformat()].metadata["problem"].value == expected
    assert settled[START.isoformat()].metadata["gaps"].value == expected


def test_kafka_connect_parquet_from_s3(spark, spark_resource, data_dir, moto: MotoServer):
    root = data_dir / "archive" / "kc_parquet"
    shutil.rmtree(root, ignore_errors=True)
    truth = generate_kafka_connect_archive(root, START, 2, 300, fmt="parquet", seed=9)
    assert moto.upload(root, BUCKET, "topics/playback") == len(truth.files)
    spec = kafka_spec("kc_parquet", f"s3://{BUCKET}/topics/playback", "parquet")
    with aws(moto, spark):
        result = run(spark_resource, [build_events_asset(spec)], START, D2)
    assert result.success
    assert all(c.passed for c in result.get_asset_check_evaluations())
    assert_events_are_the_truth(spark, spec, truth)
    reconciliation = {
        c.partition: {k: v.value for k, v in c.metadata.items()}
        for c in result.get_asset_check_evaluations()
        if c.check_name == "reconciliation"
    }
    assert {day: r["written"] for day, r in reconciliation.items()} == truth.written_per_day()
    assert sum(r["read"] for r in reconciliation.values()) <= truth.records


def test_a_compacted_topic_is_judged_by_hours_and_keeps_no_position_offsets(
    spark, spark_resource, local_archive, data_dir
):
    _spec, truth, root = local_archive
    target = data_dir / "archive" / "kc_compacted"
    shutil.copytree(root, target, dirs_exist_ok=True)
    # Compaction removed every record of one file: a gap in the offsets, and a legitimate one.
    removed = next(f for f in truth.files if f[1] == 2 and "hour=12" in f[0])
    (target / removed[0]).unlink()
    remaining = {
        json.loads(line)["event_id"]
        for path in target.rglob("*.json")
        for line in path.read_text().splitlines()
    }
    compacted = kafka_spec("kc_compacted", "archive/kc_compacted", "jsonl", offsets_have_gaps=True)
    compacted = compacted.model_copy(update={"allow_empty_hours": True})
    result = run(spark_resource, [build_events_asset(compacted)], START, D2)
    assert result.success and all(c.passed for c in settled_by_day(result).values())
    rows = spark.table(events_table(spark, compacted)).collect()
    assert {r["event_id"]: r["_kafka_partition"] for r in rows} == {
        event_id: partition for event_id, (partition, _, _) in truth.events.items() if event_id in remaining
    }
    assert len(rows) < len(truth.events) and all(r["_kafka_offset"] is None for r in rows)
