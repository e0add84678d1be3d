"""Online replay to a separate Kinesis stream, on moto's server (a real HTTP endpoint).

The session's events table (`events_materialized`) is only read. Each test gets fresh streams: the
backfill stream the demo spec declares, its live stream, and one stream it does not declare.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from backfill_platform.cli import main
from backfill_platform.pipeline.replay import checkpoint as checkpoints
from backfill_platform.pipeline.replay.delivery import CircuitBreaker, CircuitOpen, Pacer, ReplayError
from backfill_platform.pipeline.replay.kinesis import KinesisWriter, batches_for, stream_shards
from backfill_platform.pipeline.replay.runner import ReplayRequest, run_replay
from backfill_platform.pipeline.replay.source import Event
from backfill_platform.specs.durations import midnight
from backfill_platform.specs.stream import StreamSpec
from backfill_platform_tests.support.moto import aws_environment
from backfill_platform_tests.support.processes import wait_until
from backfill_platform_tests.support.session import START

BACKFILL, LIVE, UNDECLARED = "playback-backfill", "playback-events", "playback-undeclared"
FIRST, AFTER = START + timedelta(days=1), START + timedelta(days=3)  # two days, end exclusive


@pytest.fixture(scope="module")
def kinesis(moto):
    with aws_environment(moto):
        yield moto.client("kinesis")


@pytest.fixture
def streams(kinesis, events_materialized):
    """Fresh, empty streams: the backfill one (4 shards), the live one and an undeclared one."""
    for name, shards in ((BACKFILL, 4), (LIVE, 1), (UNDECLARED, 1)):
        fresh_stream(kinesis, name, shards)
    yield kinesis
    assert read_stream(kinesis, LIVE) == [], "the live stream received records"
    assert read_stream(kinesis, UNDECLARED) == [], "an undeclared stream received records"


def fresh_stream(client, name: str, shards: int) -> None:
    if name in client.list_streams()["StreamNames"]:
        client.delete_stream(StreamName=name, EnforceConsumerDeletion=True)
    client.create_stream(StreamName=name, ShardCount=shards)
    client.get_waiter("stream_exists").wait(StreamName=name, WaiterConfig={"Delay": 0.2})


def read_stream(client, name: str) -> list[tuple[str, dict]]:
    """(partition key, decoded JSON) of every record of every shard, from TRIM_HORIZON."""
    records = []
    for shard in client.list_shards(StreamName=name)["Shards"]:
        iterator = client.get_shard_iterator(
            StreamName=name, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        while iterator:
            page = client.get_records(ShardIterator=iterator, Limit=10000)
            records += [(r["PartitionKey"], json.loads(r["Data"])) for r in page["Records"]]
            if not page["Records"]:
                break
            iterator = page.get("NextShardIterator")
    return records


def table_events(snapshot_id: int | None = None) -> dict[str, dict]:
    """event id -> row of the whole events table (every day), at a snapshot, read through PyIceberg."""
    from backfill_platform.lakehouse.resources import open_catalog

    table = open_catalog().load_table(("raw", "playback_events"))
    rows = table.scan(snapshot_id=snapshot_id).to_arrow().to_pylist()
    return {row["event_id"]: row for row in rows}


def in_range(row: dict) -> bool:
    return midnight(FIRST) <= row["event_time"] < midnight(AFTER)


def replay_cli(*extra: str, target: str = BACKFILL, checkpoint: Path | None = None):
    args = ["replay", "--stream", "playback", "--start", str(FIRST), "--end", str(AFTER)]
    args += ["--to-kinesis", target, *extra]
    if checkpoint is not None:
        args += ["--checkpoint", str(checkpoint)]
    return CliRunner().invoke(main, args)


def test_replays_two_days_to_the_backfill_stream_only(streams, tmp_path: Path) -> None:
    checkpoint = tmp_path / "replay.json"
    began = time.monotonic()
    result = replay_cli("--max-records-per-second", "4000", checkpoint=checkpoint)
    seconds = time.monotonic() - began
    assert result.exit_code == 0, result.output
    state = checkpoints.load(checkpoint)
    assert state.done and state.delivered == state.total > 0
    print(f"replay: {state.delivered} events in {seconds:.1f} s ({state.delivered / seconds:.0f} records/s)")

    events = table_events(state.snapshot_id)
    expected = {event_id for event_id, row in events.items() if in_range(row)}
    assert len(expected) == state.total
    assert len({row["event_time"].date() for row in events.values()}) > 2  # other days exist
    records = read_stream(streams, BACKFILL)
    keys = [key for key, _ in records]
    assert len(keys) == len(set(keys)), "a clean replay sends every event once"
    assert set(keys) == expected  # every event of the two days, none of another day
    payload = ["user_id", "title_id", "event_type", "position_sec", "device_type", "country"]
    for key, body in records:
        row = events[key]
        assert list(body) == ["event_id", "event_time", *payload]  # the latest schema's fields
        assert body["event_id"] == key
        assert body["event_time"] == row["event_time"].astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        assert {name: body[name] for name in payload} == {name: row[name] for name in payload}

    # The live stream and an undeclared stream are refused before anything is sent.
    refused = replay_cli(target=LIVE, checkpoint=tmp_path / "live.json")
    assert refused.exit_code != 0 and "live Kinesis stream" in refused.output, refused.output
    refused = replay_cli(target=UNDECLARED, checkpoint=tmp_path / "undeclared.json")
    assert refused.exit_code != 0 and "not declared as a backfill stream" in refused.output, refused.output
    assert not (tmp_path / "live.json").exists() and not (tmp_path / "undeclared.json").exists()

    # A checkpoint of another replay is refused; a finished one is not replayed again.
    longer = ["--start", str(FIRST), "--end", str(AFTER + timedelta(days=1))]
    args = [
        "replay",
        "--stream",
        "playback",
        *longer,
        "--to-kinesis",
        BACKFILL,
        "--checkpoint",
        str(checkpoint),
    ]
    other = CliRunner().invoke(main, args)
    assert other.exit_code != 0 and "belongs to another replay" in other.output, other.output
    again = replay_cli(checkpoint=checkpoint)
    assert again.exit_code == 0 and "already complete" in again.output, again.output
    assert len(read_stream(streams, BACKFILL)) == len(records)


def test_killed_replay_resumes_with_at_most_one_batch_again(streams, moto, tmp_path: Path) -> None:
    checkpoint = tmp_path / "replay.json"
    rate = 400  # records/s, so one batch is 400 records and the whole replay takes ~10 s
    command = [str(Path(sys.executable).with_name("backfill-platform")), "replay", "--stream", "playback"]
    command += ["--start", str(FIRST), "--end", str(AFTER), "--to-kinesis", BACKFILL]
    command += ["--max-records-per-second", str(rate), "--checkpoint", str(checkpoint)]
    process = subprocess.Popen(
        command,
        env={**os.environ, **moto.env()},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )

    def killed_after_a_batch() -> bool:
        """Kill the replay once its checkpoint records a batch delivered; true then, or if it ended first
        (the assertion below shows why)."""
        if process.poll() is not None:
            return True
        state = checkpoints.load(checkpoint) if checkpoint.exists() else None
        if state is not None and state.delivered >= rate:
            process.send_signal(signal.SIGKILL)
            return True
        return False

    try:
        wait_until(
            killed_after_a_batch, timeout=60, every=0.02, what=f"a checkpoint with {rate} records delivered"
        )
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == -signal.SIGKILL, process.stderr.read().decode()
    killed = checkpoints.load(checkpoint)
    assert 0 < killed.delivered < killed.total and not killed.done
    sent_before = len(read_stream(streams, BACKFILL))
    assert killed.delivered <= sent_before <= killed.delivered + rate

    resumed = replay_cli("--max-records-per-second", "4000", checkpoint=checkpoint)
    assert resumed.exit_code == 0, resumed.output
    assert f"resuming after {killed.delivered:,}" in resumed.output
    final = checkpoints.load(checkpoint)
    assert final.done and final.delivered == final.total and final.snapshot_id == killed.snapshot_id

    events = table_events(final.snapshot_id)
    expected = {event_id for event_id, row in events.items() if in_range(row)}
    keys = Counter(key for key, _ in read_stream(streams, BACKFILL))
    assert set(keys) == expected  # the union is exactly the events of the range
    duplicates = sum(keys.values()) - len(keys)
    assert duplicates == sent_before - killed.delivered <= rate  # at most the batch in flight


def test_dagster_job_replays_with_the_same_config(streams, tmp_path: Path) -> None:
    from backfill_platform.components.registry import project_specs
    from backfill_platform.pipeline.replay.job import replay_to_kinesis_job
    from backfill_platform.pipeline.replay.kinesis import KinesisResource

    config = {
        "stream": "playback",
        "start": str(START),
        "end": str(START + timedelta(days=1)),
        "to_kinesis": BACKFILL,
        "max_records_per_second": 4000,
        "checkpoint": str(tmp_path / "job.json"),
    }
    result = replay_to_kinesis_job.execute_in_process(
        run_config={"ops": {"replay_to_kinesis_op": {"config": config}}},
        resources={"specs": project_specs(), "kinesis": KinesisResource()},
    )
    assert result.success
    summary = result.output_for_node("replay_to_kinesis_op")
    events = table_events(checkpoints.load(tmp_path / "job.json").snapshot_id)
    expected = {i for i, row in events.items() if row["event_time"].date() == START}
    keys = [key for key, _ in read_stream(streams, BACKFILL)]
    assert sorted(keys) == sorted(expected) and summary["delivered"] == len(expected)

    refused = replay_to_kinesis_job.execute_in_process(
        run_config={"ops": {"replay_to_kinesis_op": {"config": {**config, "to_kinesis": LIVE}}}},
        resources={"specs": project_specs(), "kinesis": KinesisResource()},
        raise_on_error=False,
    )
    assert not refused.success


class ThrottlingClient:
    """A real client whose PutRecords refuses every other record of a call's first attempt, as Kinesis
    does under throttling: the refused records are not written, the others are."""

    def __init__(self, client) -> None:
        self.client, self.seen = client, set()

    def put_records(self, StreamName: str, Records: list[dict]) -> dict:
        refuse = {i for i, r in enumerate(Records) if r["PartitionKey"] not in self.seen and i % 2}
        self.seen.update(r["PartitionKey"] for r in Records)
        accepted = [r for i, r in enumerate(Records) if i not in refuse]
        answers = iter(self.client.put_records(StreamName=StreamName, Records=accepted)["Records"])
        code = {"ErrorCode": "ProvisionedThroughputExceededException", "ErrorMessage": "Rate exceeded"}
        results = [code if i in refuse else next(answers) for i in range(len(Records))]
        return {"FailedRecordCount": len(refuse), "Records": results}


def test_refused_records_are_retried_and_a_lost_stream_opens_the_breaker(kinesis) -> None:
    name = "replay-writer-test"
    fresh_stream(kinesis, name, 4)
    sleeps: list[float] = []
    writer = KinesisWriter(ThrottlingClient(kinesis), name, 4, 4000, sleep=sleeps.append)
    writer.put([(f"id-{i}", b'{"n": %d}' % i) for i in range(100)])
    keys = Counter(key for key, _ in read_stream(kinesis, name))
    assert keys == Counter(f"id-{i}" for i in range(100))  # each record exactly once
    assert writer.stats.throttled_records == writer.stats.retried_records == 50
    assert writer.stats.calls == 2 and sleeps  # one retry, after a backoff

    # The stream disappears: every call fails, and the breaker stops the writer with a clear error.
    kinesis.delete_stream(StreamName=name)
    writer = KinesisWriter(
        kinesis, name, 1, 1000, breaker=CircuitBreaker(window=5, min_calls=3), sleep=lambda _: None
    )
    with pytest.raises(CircuitOpen, match=r"circuit breaker open: 100% .*ResourceNotFoundException"):
        writer.put([("id-0", b"{}")])
    assert writer.stats.calls == 3
    with pytest.raises(ReplayError, match="does not exist: create it first"):
        stream_shards(kinesis, name)  # checked before a replay starts


def test_replay_stops_on_the_breaker_and_resumes_from_its_checkpoint(streams, playback, tmp_path) -> None:
    from backfill_platform.lakehouse.resources import open_catalog

    request = ReplayRequest(playback, FIRST, AFTER, BACKFILL, 4000, tmp_path / "replay.json")

    def lose_stream(state, batch: int) -> None:
        if state.batches == 1:
            streams.delete_stream(StreamName=BACKFILL)

    with pytest.raises(CircuitOpen, match=r"circuit breaker open.*Stopped after 500 of"):
        run_replay(request, streams, open_catalog(), on_batch=lose_stream, sleep=lambda _: None)
    assert checkpoints.load(request.checkpoint_path).delivered == 500

    fresh_stream(streams, BACKFILL, 2)  # the first batch is gone with the old stream
    result = run_replay(request, streams, open_catalog())
    assert result.resumed_from == 500 and result.checkpoint.done
    keys = [key for key, _ in read_stream(streams, BACKFILL)]
    assert len(keys) == len(set(keys)) == result.checkpoint.total - 500


def test_the_spec_declares_the_live_and_backfill_streams(playback) -> None:
    assert playback.live_kinesis_stream == LIVE and playback.backfill_kinesis_streams == [BACKFILL]
    with pytest.raises(ValueError, match="lists the live stream"):
        StreamSpec.model_validate(playback.model_dump() | {"backfill_kinesis_streams": [BACKFILL, LIVE]})
    with pytest.raises(ValueError, match="is not a Kinesis stream name"):
        StreamSpec.model_validate(playback.model_dump() | {"live_kinesis_stream": "no spaces"})


def test_pacing_and_batch_limits() -> None:
    now, slept = [0.0], []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    pacer = Pacer(1000, clock=lambda: now[0], sleep=sleep)
    for _ in range(4):
        pacer.acquire(500)
    assert sum(slept) == pytest.approx(1.5)  # 2,000 records at 1,000/s: the last call starts at 1.5 s

    writer = KinesisWriter(None, "s", shards=1, max_records_per_second=5000)
    assert writer.records_per_second == 1000 and writer.batch_records == 500  # the shard's limit
    assert KinesisWriter(None, "s", shards=3, max_records_per_second=50).batch_records == 50
    moment = datetime(2026, 10, 1, tzinfo=UTC)
    big = [Event(f"e{i}", moment, b"x" * (300 << 10)) for i in range(10)]
    sizes = [len(batch) for batch in batches_for(iter(big), writer)]
    assert sizes == [3, 3, 3, 1]  # 1 MiB per second on one shard
    writer = KinesisWriter(None, "s", shards=8, max_records_per_second=8000)
    assert [len(b) for b in batches_for(iter(big * 2), writer)] == [17, 3]  # 5 MiB per call
    with pytest.raises(ReplayError, match="1 MiB record limit"):
        list(batches_for(iter([Event("huge", moment, b"x" * (1 << 20))]), writer))


def test_a_request_filed_before_the_replay_keeps_its_subject_out_and_is_counted(
    kinesis, events_materialized, spark, playback, tmp_path: Path
) -> None:
    """Through the Dagster job: a request filed before the start; none of the subject's records reach the
    stream, every other event does, and the op's metadata counts them and names the requests honored. A
    stream without a subject_field sends everything and says it is not covered."""
    from backfill_platform.pipeline.erasure.requests import file_requests
    from backfill_platform.pipeline.replay.job import replay_to_kinesis_job
    from backfill_platform.pipeline.replay.kinesis import KinesisResource
    from backfill_platform.specs.spec_set import SpecSet
    from backfill_platform_tests.support.replay_streams import replay_stream

    target, first, after = "erasure-replay-backfill", START, START + timedelta(days=1)
    fresh_stream(kinesis, target, 2)
    spec = replay_stream(
        spark, playback, "playback_kinesis_erasure", first, after, backfill_kinesis_streams=[target]
    )
    rows = table_events_of(spec)
    subject, erased = Counter(row["user_id"] for row in rows.values()).most_common(1)[0]
    _, snapshot = file_requests(spark, [subject], spec.name, "test: filed before the replay")
    config = {"stream": spec.name, "start": str(first), "end": str(after), "to_kinesis": target}
    config |= {"max_records_per_second": 4000, "checkpoint": str(tmp_path / "erasure.json")}
    result = replay_to_kinesis_job.execute_in_process(
        run_config={"ops": {"replay_to_kinesis_op": {"config": config}}},
        resources={"specs": SpecSet(streams={spec.name: spec}), "kinesis": KinesisResource()},
    )
    assert result.success
    keys = Counter(key for key, _ in read_stream(kinesis, target))
    expected = {event_id for event_id, row in rows.items() if row["user_id"] != subject}
    assert set(keys) == expected and max(keys.values()) == 1 and erased > 0
    (output,) = [e for e in result.all_events if e.event_type_value == "STEP_OUTPUT"]
    metadata = {name: value.value for name, value in output.event_specific_data.metadata.items()}
    assert metadata["erased"] == metadata["erased_in_total"] == erased and metadata["erasure_covered"]
    assert metadata["erasure_requests_first_snapshot"] == metadata["erasure_requests_last_snapshot"]
    assert metadata["erasure_requests_last_snapshot"] == str(snapshot)
    assert metadata["delivered"] + erased == metadata["total"] == len(rows)

    # Without a subject_field the stream is not covered: a request of its name changes nothing.
    uncovered = replay_stream(
        spark,
        playback,
        "playback_kinesis_no_subject",
        first,
        after,
        backfill_kinesis_streams=[target],
        subject_field=None,
    )
    file_requests(spark, [subject], uncovered.name, "test: a stream erasure does not cover")
    fresh_stream(kinesis, target, 2)
    request = ReplayRequest(uncovered, first, after, target, 4000, tmp_path / "uncovered.json")
    from backfill_platform.lakehouse.resources import open_catalog

    plain = run_replay(request, kinesis, open_catalog())
    assert {key for key, _ in read_stream(kinesis, target)} == set(rows)
    assert not plain.erasure.covered and plain.erasure.erased == 0
    assert "not covered by erasure" in plain.erasure.describe(uncovered.name)


def table_events_of(spec: StreamSpec) -> dict[str, dict]:
    """event id -> row of a stream's events table, read through PyIceberg."""
    from backfill_platform.lakehouse.resources import open_catalog

    rows = open_catalog().load_table(("raw", spec.events_table)).scan().to_arrow().to_pylist()
    return {row["event_id"]: row for row in rows}
