"""Replay to a Kafka backfill topic, exactly once, on a real broker (Apache Kafka in KRaft mode, `kafka`).

The session's events table (`events_materialized`) is only read. One module broker holds the demo spec's
backfill topic (3 partitions), its live topic and a topic it does not declare; each replay below covers its
own range of days, told apart by the records' `backfill.range` header. Readers are plain confluent-kafka
consumers, `read_committed` unless a test looks at what was sent but never committed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from datetime import UTC, date, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from backfill_platform import settings
from backfill_platform.cli import main
from backfill_platform.faults import FAILPOINTS_ENV
from backfill_platform.pipeline.kafka_cluster import KafkaResource
from backfill_platform.pipeline.replay.delivery import ReplayError
from backfill_platform.pipeline.replay.kafka import (
    KAFKA_AFTER_COMMIT,
    KAFKA_BEFORE_COMMIT,
    KAFKA_BEFORE_PRODUCE,
)
from backfill_platform.specs.durations import midnight
from backfill_platform_tests.support.kafka import Record, create_topic, read_topic
from backfill_platform_tests.support.session import START

BACKFILL, LIVE, UNDECLARED = "playback-backfill", "playback-events", "playback-undeclared"
PAYLOAD = ["user_id", "title_id", "event_type", "position_sec", "device_type", "country"]
CLI = Path(sys.executable).with_name("backfill-platform")


def day(offset: int) -> date:
    return START + timedelta(days=offset)


@pytest.fixture(scope="module")
def topics(kafka, events_materialized):
    create_topic(kafka.bootstrap, BACKFILL, partitions=3)
    create_topic(kafka.bootstrap, LIVE)
    create_topic(kafka.bootstrap, UNDECLARED)
    yield kafka
    assert read_topic(kafka.bootstrap, LIVE, committed=False) == [], "the live topic received records"
    assert read_topic(kafka.bootstrap, UNDECLARED, committed=False) == [], "an undeclared topic did"


def expected_events(first: date, after: date) -> dict[str, dict]:
    """event id -> row of the events table for [first, after), read through PyIceberg."""
    from backfill_platform.lakehouse.resources import open_catalog

    rows = open_catalog().load_table(("raw", "playback_events")).scan().to_arrow().to_pylist()
    return {r["event_id"]: r for r in rows if midnight(first) <= r["event_time"] < midnight(after)}


def of_range(records: list[Record], first: date, after: date) -> list[Record]:
    return [r for r in records if r.headers.get("backfill.range") == f"{first}/{after}"]


def replay_cli(bootstrap: str, first: date, after: date, *extra: str, target: str = BACKFILL):
    args = ["replay", "--stream", "playback", "--start", str(first), "--end", str(after)]
    return CliRunner().invoke(
        main, [*args, "--to-kafka", target, *extra], env={settings.KAFKA_BOOTSTRAP_ENV: bootstrap}
    )


def test_replays_two_days_to_the_backfill_topic_exactly_once(topics) -> None:
    first, after = day(1), day(3)
    result = replay_cli(topics.bootstrap, first, after)
    assert result.exit_code == 0, result.output
    assert "end offsets for read_committed consumers" in result.output, result.output

    events = expected_events(first, after)
    records = of_range(read_topic(topics.bootstrap, BACKFILL), first, after)
    keys = Counter(record.key for record in records)
    assert set(keys) == set(events) and max(keys.values()) == 1  # every event of the range, once
    assert {record.partition for record in records} == {0, 1, 2}  # keys spread over the partitions
    for record in records:
        row = events[record.key]
        assert list(record.value) == ["event_id", "event_time", *PAYLOAD]  # the latest schema's fields
        assert {name: record.value[name] for name in PAYLOAD} == {name: row[name] for name in PAYLOAD}
        event_time = row["event_time"].astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        assert record.value["event_time"] == record.headers["event_time"] == event_time
        assert record.headers["backfill"] == "true" and record.headers["backfill.stream"] == "playback"
        assert record.headers["schema_version"] == "2" and record.headers["backfill.run"]

    again = replay_cli(topics.bootstrap, first, after)
    assert again.exit_code == 0 and "already complete" in again.output, again.output
    assert len(of_range(read_topic(topics.bootstrap, BACKFILL), first, after)) == len(records)

    # The live topic and an undeclared one are refused before anything is sent (the fixture checks).
    refused = replay_cli(topics.bootstrap, first, after, target=LIVE)
    assert refused.exit_code != 0 and "live Kafka topic" in refused.output, refused.output
    refused = replay_cli(topics.bootstrap, first, after, target=UNDECLARED)
    assert refused.exit_code != 0 and "not declared as a backfill topic" in refused.output, refused.output


@pytest.mark.parametrize(
    ("failpoint", "offset", "visible_batches"),
    [(KAFKA_BEFORE_PRODUCE, 0, 1), (KAFKA_BEFORE_COMMIT, 3, 1), (KAFKA_AFTER_COMMIT, 4, 2)],
)
def test_a_replay_killed_at_each_point_resumes_exactly_once(topics, failpoint, offset, visible_batches):
    """Killed in its second batch's transaction (the third pass: the replay's start is a transaction
    too), before producing, before committing or after committing; then resumed."""
    first, after = day(offset), day(offset + 1)
    rate = 500  # records per second: one batch is 500 events
    command = [str(CLI), "replay", "--stream", "playback", "--start", str(first), "--end", str(after)]
    command += ["--to-kafka", BACKFILL, "--max-records-per-second", str(rate)]
    env = {**os.environ, settings.KAFKA_BOOTSTRAP_ENV: topics.bootstrap, FAILPOINTS_ENV: f"{failpoint}@3"}
    killed = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]

    committed = of_range(read_topic(topics.bootstrap, BACKFILL), first, after)
    assert len(committed) == visible_batches * rate
    sent = of_range(read_topic(topics.bootstrap, BACKFILL, committed=False), first, after)
    assert len(sent) == (2 * rate if failpoint == KAFKA_BEFORE_COMMIT else len(committed))

    resumed = replay_cli(topics.bootstrap, first, after, "--max-records-per-second", "20000")
    assert resumed.exit_code == 0, resumed.output
    assert f"resuming after {visible_batches * rate:,} delivered events" in resumed.output, resumed.output
    keys = Counter(r.key for r in of_range(read_topic(topics.bootstrap, BACKFILL), first, after))
    assert set(keys) == set(expected_events(first, after)) and max(keys.values()) == 1


def test_the_dagster_job_replays_with_typed_config(topics) -> None:
    from backfill_platform.components.registry import project_specs
    from backfill_platform.pipeline.replay.job import replay_to_kafka_job

    first, after = day(2), day(3)
    config = {"stream": "playback", "start": str(first), "end": str(after), "to_kafka": BACKFILL}
    result = replay_to_kafka_job.execute_in_process(
        run_config={"ops": {"replay_to_kafka_op": {"config": config}}},
        resources={"kafka": KafkaResource(bootstrap_servers=topics.bootstrap), "specs": project_specs()},
    )
    assert result.success
    (materialized,) = [e for e in result.all_events if e.event_type_value == "STEP_OUTPUT"]
    metadata = materialized.event_specific_data.metadata
    events = expected_events(first, after)
    assert metadata["delivered"].value == metadata["total"].value == len(events)
    assert set(metadata["end_offsets"].value) == {"0", "1", "2"}
    records = of_range(read_topic(topics.bootstrap, BACKFILL), first, after)
    assert sorted(r.key for r in records) == sorted(events)
    assert {r.headers["backfill.run"] for r in records} == {result.run_id}


def test_a_broker_stopped_mid_replay_opens_the_breaker_and_the_replay_resumes(
    events_materialized, tmp_path: Path
) -> None:
    from backfill_platform.components.registry import package_project, project_specs
    from backfill_platform.devtools.kafka_broker.broker import kafka_broker
    from backfill_platform.lakehouse.resources import open_catalog
    from backfill_platform.pipeline.replay.runner import ReplayRequest, run_kafka_replay

    first, after = day(0), day(2)
    request = ReplayRequest(
        project_specs(package_project()).streams["playback"], first, after, BACKFILL, 1000, sink="kafka"
    )
    state_dir = tmp_path / "broker"
    with kafka_broker(state_dir) as broker:
        create_topic(broker.bootstrap, BACKFILL, partitions=2)
        kafka = KafkaResource(
            bootstrap_servers=broker.bootstrap, message_timeout_ms=3000, transaction_timeout_ms=6000
        )

        def stop_after_two(state, _batch: int) -> None:
            if state.batches == 2:
                broker.process.terminate()
                broker.process.wait(timeout=30)

        with pytest.raises(ReplayError) as stopped:
            run_kafka_replay(request, kafka, open_catalog(), on_batch=stop_after_two)
    message = str(stopped.value)
    assert "circuit breaker open" in message and broker.bootstrap in message, message
    assert "Stopped after 2,000 of" in message and "run the same replay again" in message, message

    with kafka_broker(state_dir) as restarted:  # the same broker, data and port
        assert restarted.bootstrap == broker.bootstrap
        result = run_kafka_replay(request, kafka, open_catalog())
        assert result.resumed_from == 2000 and result.checkpoint.done
        keys = Counter(r.key for r in of_range(read_topic(restarted.bootstrap, BACKFILL), first, after))
    assert set(keys) == set(expected_events(first, after)) and max(keys.values()) == 1


def test_a_request_filed_during_a_replay_stops_its_subject_from_the_next_batch(
    kafka, events_materialized, spark, playback
) -> None:
    """A request filed after the first batch (from the runner's batch callback, between two transactions):
    the subject's records of the first batch stay sent, none after it are; every other event exactly once."""
    from backfill_platform.lakehouse.resources import open_catalog
    from backfill_platform.pipeline.erasure.requests import file_requests
    from backfill_platform.pipeline.replay.runner import ReplayRequest, run_kafka_replay
    from backfill_platform_tests.support.replay_streams import replay_order, replay_stream

    topic, first, after, rate = "erasure-replay-backfill", day(1), day(2), 400  # a batch: 400 events
    create_topic(kafka.bootstrap, topic, partitions=2)
    spec = replay_stream(
        spark, playback, "playback_kafka_erasure", first, after, backfill_kafka_topics=[topic]
    )
    order = replay_order(open_catalog().load_table(("raw", spec.events_table)).scan().to_arrow().to_pylist())
    # The subject: the user with most events after the first batch among those with some in it.
    in_first = {row["user_id"] for row in order[:rate]}
    later = Counter(row["user_id"] for row in order[rate:] if row["user_id"] in in_first)
    subject, erased = later.most_common(1)[0]
    filed: list[int | None] = []

    def file_after_the_first_batch(state, _batch: int) -> None:
        if state.batches == 1:
            filed.append(file_requests(spark, [subject], spec.name, "test: filed mid-replay")[1])

    request = ReplayRequest(spec, first, after, topic, rate, sink="kafka")
    result = run_kafka_replay(
        request,
        KafkaResource(bootstrap_servers=kafka.bootstrap),
        open_catalog(),
        on_batch=file_after_the_first_batch,
    )

    expected = [row["event_id"] for row in order[:rate]]
    expected += [row["event_id"] for row in order[rate:] if row["user_id"] != subject]
    keys = Counter(record.key for record in read_topic(kafka.bootstrap, topic))
    assert sorted(keys) == sorted(expected) and max(keys.values()) == 1
    assert sum(1 for row in order[:rate] if row["user_id"] == subject) > 0  # sent before the request
    state = result.checkpoint
    assert result.erasure.erased == state.erased == erased > 0
    assert state.done and state.delivered == len(expected) and state.position == state.total == len(order)
    assert result.erasure.last_snapshot == state.requests_snapshot == filed[0] is not None
    assert result.erasure.first_snapshot != filed[0]
