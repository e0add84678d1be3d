"""A Kafka Connect archive proven complete at its read windows' edges by its live topic, on a real broker.

The archive is the Kafka Connect generator's (two days over three partitions, JSON lines, files in the hour
of their records); its records are produced, in offset order, to a topic of the module's broker (`kafka`)
with their ingestion times as Kafka timestamps, so the broker's offsets are the files' offsets. The spec
asks for `edges_from_topic`. A file lost at the end of a day's window leaves no hole between files (the
files' own proof settles the day) and is named through the topic's offsets; a partition the topic no
longer retains, and a broker that cannot be asked, fall back to the files' own proof, and say so.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from backfill_platform import settings
from backfill_platform.components.registry import demo_spec_data
from backfill_platform.devtools.generator.kafka_connect import LAYOUT, generate_kafka_connect_archive
from backfill_platform.operations.plan import build_plan
from backfill_platform.pipeline.events.assets import build_events_asset
from backfill_platform.pipeline.hour_mapping import ReadWindow
from backfill_platform.specs.durations import day_bounds
from backfill_platform.specs.stream import StreamSpec
from backfill_platform_tests.support.datasets import run
from backfill_platform_tests.support.kafka import create_topic
from backfill_platform_tests.support.processes import free_port
from backfill_platform_tests.support.session import START

TOPIC = "plays-live"
D2 = START + timedelta(days=1)
EDGES = "at the window's edges"


def edges_spec(name: str, edges: bool = True) -> StreamSpec:
    raw = demo_spec_data("playback")
    raw["name"] = name
    raw["archive"] = {"location": f"archive/{name}", "layout": LAYOUT, "format": "jsonl", "compression": "none",
                      "kafka_connect": {"topic": TOPIC, "edges_from_topic": edges}}  # fmt: skip
    return StreamSpec.model_validate(raw)


def hour_of(name: str) -> datetime:
    return datetime.strptime(name.rsplit("/", 1)[0], LAYOUT).replace(tzinfo=UTC)


@pytest.fixture(scope="module")
def live(kafka, data_dir: Path):
    """The archive under archive/kc_edges, its records in the topic at the files' offsets."""
    root = data_dir / "archive" / "kc_edges"
    shutil.rmtree(root, ignore_errors=True)
    truth = generate_kafka_connect_archive(root, START, 2, 300, topic=TOPIC, fmt="json")
    create_topic(kafka.bootstrap, TOPIC, partitions=3)
    produce_archive(kafka.bootstrap, root, truth.files)
    watermarks = end_offsets(kafka.bootstrap)
    for partition in range(3):
        assert watermarks[partition] == (0, sum(c for _n, p, _s, c in truth.files if p == partition))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(settings.KAFKA_BOOTSTRAP_ENV, kafka.bootstrap)
        yield truth, root


def produce_archive(bootstrap: str, root: Path, files: list[tuple[str, int, int, int]]) -> None:
    """Each file's records to its partition, in offset order, stamped with the file's ingestion hour (plus
    their offset in milliseconds: increasing in each partition)."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for name, partition, start, _count in sorted(files, key=lambda f: (f[1], f[2])):
        base = int(hour_of(name).timestamp() * 1000)
        for i, line in enumerate((root / name).read_text().splitlines()):
            producer.produce(TOPIC, value=line.encode(), partition=partition, timestamp=base + start + i)
    assert producer.flush(30) == 0


def end_offsets(bootstrap: str) -> dict[int, tuple[int, int]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "edges-test"})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10) for p in range(3)}
    finally:
        consumer.close()


def copy_without(root: Path, data_dir: Path, name: str, lost: str | None) -> None:
    target = data_dir / "archive" / name
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(root, target)
    if lost is not None:
        (target / lost).unlink()


def test_a_complete_archive_settles_proven_at_its_edges(live, spark_resource) -> None:
    plan = build_plan(edges_spec("kc_edges"), [], START, D2 + timedelta(days=1))
    assert [d.offset_gaps for d in plan.partitions] == [[], []]
    assert all(EDGES in d.proof for d in plan.partitions), [d.proof for d in plan.partitions]

    result = run(spark_resource, [build_events_asset(edges_spec("kc_edges"))], START, D2)
    settled = {c.partition: c for c in result.get_asset_check_evaluations() if c.check_name == "settled"}
    assert all(c.passed for c in settled.values()) and len(settled) == 2
    assert EDGES in settled[START.isoformat()].metadata["proof"].value


def test_a_file_lost_at_a_windows_end_is_named_through_the_topic(live, data_dir, spark_resource) -> None:
    truth, root = live
    read = ReadWindow.of(edges_spec("kc_edges"), *day_bounds(START))
    low, high = read.low, read.high
    ones = sorted((f for f in truth.files if f[1] == 1), key=lambda f: f[2])
    in_window = [f for f in ones if low <= hour_of(f[0]) < high]
    lost, before = in_window[-1], in_window[-2]
    copy_without(root, data_dir, "kc_edges_lost", lost[0])
    copy_without(root, data_dir, "kc_inside_only", lost[0])
    expected = (
        f"partition 1: offsets {lost[2]}-{lost[2] + lost[3] - 1} missing after file {before[0]} "
        f"(the topic's last of the window: {lost[2] + lost[3] - 1})"
    )

    # The files alone cannot see it: what remains of the window is contiguous.
    inside = build_plan(edges_spec("kc_inside_only", edges=False), [], START, D2)
    assert (
        inside.partitions[0].offset_gaps == []
        and inside.partitions[0].proof == "Kafka offsets inside the files"
    )
    plan = build_plan(edges_spec("kc_edges_lost"), [], START, D2)
    assert plan.partitions[0].offset_gaps == [expected]

    result = run(spark_resource, [build_events_asset(edges_spec("kc_edges_lost"))], START, START)
    (settled,) = [c for c in result.get_asset_check_evaluations() if c.check_name == "settled"]
    assert not settled.passed and settled.metadata["gaps"].value == expected


def test_an_unreachable_broker_falls_back_to_the_files_and_says_so(live, monkeypatch) -> None:
    monkeypatch.setenv(settings.KAFKA_BOOTSTRAP_ENV, f"127.0.0.1:{free_port()}")
    plan = build_plan(edges_spec("kc_edges"), [], START, D2)
    assert plan.partitions[0].offset_gaps == []
    assert plan.partitions[0].proof.startswith(
        "Kafka offsets inside the files only (the topic could not be asked"
    )


def test_a_partition_beyond_retention_is_proven_by_its_files_only(live, kafka) -> None:
    """Last in the module: it deletes the topic's first records of partition 0."""
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    (done,) = admin.delete_records([TopicPartition(TOPIC, 0, 5)]).values()
    assert done.result(30).low_watermark == 5
    plan = build_plan(edges_spec("kc_edges"), [], START, D2)
    assert plan.partitions[0].offset_gaps == []
    assert "partitions 0 inside the files only (beyond the topic's retention)" in plan.partitions[0].proof
