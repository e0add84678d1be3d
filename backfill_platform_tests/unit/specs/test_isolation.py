"""One stream cannot reach another's data, nor the platform's (issue 59, part 2): an archive is never a table
the platform writes, a replay target is never any stream's live topic or stream, and where an archive may
be (a folder outside the data directory, an S3 bucket) is the operator's setting, never a spec's."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from backfill_platform import settings
from backfill_platform.pipeline.archive.stream_archive import archive_for
from backfill_platform.specs.isolation import PLATFORM_NAMESPACES
from backfill_platform.specs.stream import StreamSpec
from backfill_platform_tests.support.hostile import (  # noqa: F401 - nothing_outside is an autouse fixture
    nothing_outside,
    project_with,
    refused,
)
from backfill_platform_tests.support.projects import load_project
from backfill_platform_tests.support.specs import mutated

KAFKA_METADATA = {"topic": "victim-live"}


def refused_project(parent: Path, components: dict[str, dict], failing: str) -> str:
    """The refusal of a project of `components`, naming the `failing` one's file, on one line."""
    message = refused(project_with(parent, components), failing)
    assert "\n" not in message and "Traceback" not in message
    return message


def thief(parent: Path, **changes) -> str:
    """The refusal of a project whose one stream, `thief`, has `changes`."""
    return refused_project(parent, {"thief": mutated(name="thief", **changes)}, "thief")


def thief_loads(parent: Path, **changes) -> StreamSpec:
    """The stream `thief` with `changes`, loaded from a project of its own."""
    return load_project(project_with(parent, {"thief": mutated(name="thief", **changes)})).streams["thief"]


# --- (a) an archive is never a table the platform writes ----------------------------------------------


@pytest.mark.parametrize(
    "table",
    [
        "raw.victim_events",  # another stream's validated events
        "raw.victim_quarantine",
        "raw.thief_events",  # its own
        "shadow.views_per_title_v1",
        "prod.views_per_title",
        "platform.ledger",
        "platform.ingestions",
    ],
)
def test_an_archive_table_of_the_platform_is_refused_at_load(tmp_path, table):
    archive = {"iceberg_table": table, "kafka_metadata": KAFKA_METADATA}
    components = {"victim": mutated(name="victim"), "thief": mutated(name="thief", archive=archive)}
    message = refused_project(tmp_path, components, "thief")
    namespace = table.split(".")[0]
    assert f"field 'archive.iceberg_table': Value error, archive table {table!r}" in message
    assert f"namespace {namespace!r}, which the platform writes" in message


def test_every_namespace_the_platform_writes_is_refused_and_the_lakehouse_writes_only_those():
    from backfill_platform.lakehouse import tables

    written = {
        tables.RAW_NAMESPACE,
        tables.SHADOW_NAMESPACE,
        tables.PROD_NAMESPACE,
        tables.PLATFORM_NAMESPACE,
    }
    assert written == set(PLATFORM_NAMESPACES)
    landing = mutated(name="reader", archive={"iceberg_table": "landing.playback"})
    assert StreamSpec.model_validate(landing).archive.iceberg_table == "landing.playback"


def test_an_archive_table_changed_after_load_is_refused_when_opened(data_dir):
    spec = StreamSpec.model_validate(mutated(name="reader", archive={"iceberg_table": "landing.playback"}))
    escaped = spec.model_copy(
        update={"archive": spec.archive.model_copy(update={"iceberg_table": "raw.playback_events"})}
    )
    with pytest.raises(ValueError, match="which the platform writes"):
        archive_for(escaped)


# --- (b) a replay target is never a live one --------------------------------------------------------


@pytest.mark.parametrize(
    "victim",
    [
        {"live_kafka_topic": "victim-live"},
        {"archive": {"iceberg_table": "landing.victim", "kafka_metadata": KAFKA_METADATA}},
        {"live_kinesis_stream": "victim-live"},
    ],
    ids=["live_kafka_topic", "archive_topic", "live_kinesis_stream"],
)
def test_a_backfill_target_that_is_another_streams_live_one_is_refused_at_load(tmp_path, victim):
    field = "backfill_kinesis_streams" if "live_kinesis_stream" in victim else "backfill_kafka_topics"
    components = {
        "victim": mutated(name="victim", **victim),
        "thief": mutated(name="thief", **{field: ["thief-backfill", "victim-live"]}),
    }
    message = refused_project(tmp_path, components, "thief")
    assert f"field '{field}[1]': 'victim-live' is a live" in message
    assert "of stream 'victim'" in message and "a replay never writes to a live one" in message


def test_a_backfill_topic_that_is_its_own_archive_topic_is_refused():
    spec = mutated(
        name="relay",
        archive={"iceberg_table": "landing.relay", "kafka_metadata": {"topic": "relay-live"}},
        backfill_kafka_topics=["relay-live"],
    )
    with pytest.raises(ValueError, match="'relay-live' is a live Kafka topic of stream 'relay'"):
        StreamSpec.model_validate(spec)


class RecordingSink:
    """A replay sink that records every call: a refused replay makes none."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        self.calls.append(name)
        if name == "checkpoint_location":
            return "nowhere"
        return lambda *args, **kwargs: None


@pytest.mark.parametrize("sink", ["kafka", "kinesis"])
def test_a_replay_to_a_target_live_elsewhere_is_refused_at_replay_time(sink):
    """A spec set assembled so that the load-time check never saw both streams (a stream of another code
    location): the replay judges its target against every live target the platform knows, before any
    call to the sink."""
    from backfill_platform.pipeline.replay.runner import ReplayRefused, ReplayRequest, replay
    from backfill_platform.specs.isolation import live_targets

    field = "backfill_kafka_topics" if sink == "kafka" else "backfill_kinesis_streams"
    thief = StreamSpec.model_validate(mutated(name="thief", **{field: ["victim-live"]}))
    live_field = "live_kafka_topic" if sink == "kafka" else "live_kinesis_stream"
    victim = StreamSpec.model_validate(mutated(name="victim", **{live_field: "victim-live"}))
    live = live_targets([thief, victim], sink)
    request = ReplayRequest(thief, date(2026, 10, 1), date(2026, 10, 2), "victim-live", sink=sink, live=live)
    recorder = RecordingSink()
    with pytest.raises(ReplayRefused, match=r"'victim-live' is a live .* of stream 'victim'"):
        replay(request, recorder, catalog=None)  # type: ignore[arg-type]
    assert recorder.calls == []


@pytest.mark.timeout(120)
def test_the_cli_refuses_a_replay_into_another_streams_live_topic(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from backfill_platform.cli import main

    victim = mutated(name="victim", live_kafka_topic="victim-live")
    project = project_with(
        tmp_path, {"victim": victim, "thief": mutated(name="thief", backfill_kafka_topics=["victim-live"])}
    )
    monkeypatch.chdir(project.root)  # the command line reads the project of its working directory
    monkeypatch.setenv(settings.KAFKA_BOOTSTRAP_ENV, "127.0.0.1:1")  # never reached
    args = ["replay", "--stream", "thief", "--start", "2026-10-01", "--end", "2026-10-02"]
    result = CliRunner().invoke(main, [*args, "--to-kafka", "victim-live"])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    output = " ".join(result.output.split())
    assert output.startswith("Error: ") and "Traceback" not in output
    assert "'victim-live' is a live Kafka topic of stream 'victim'" in output
    assert not (settings.data_dir() / "replay" / "thief").exists()


# --- (c) where an archive may be: the operator's settings ------------------------------------------------


def test_a_spec_cannot_grant_itself_the_outside(tmp_path, data_dir, monkeypatch):
    monkeypatch.delenv(settings.ARCHIVE_ROOTS_ENV, raising=False)
    archive = {"location": "/etc", "allow_outside_data_roots": True}
    message = thief(tmp_path, archive=archive)
    assert "'allow_outside_data_roots' is no longer a spec field" in message
    assert settings.ARCHIVE_ROOTS_ENV in message and settings.ARCHIVE_S3_BUCKETS_ENV in message


@pytest.mark.parametrize("location", ["warehouse", "warehouse/raw/victim_events/data", ".", ""])
def test_a_local_archive_never_reads_the_warehouse_or_the_data_directory(tmp_path, data_dir, location):
    message = thief(tmp_path, archive__location=location)
    assert "field 'archive.location'" in message
    assert "overlaps the warehouse" in message or "is the data directory itself" in message


def test_an_s3_bucket_is_read_only_where_the_operator_allows_it(tmp_path, monkeypatch):
    monkeypatch.delenv(settings.ARCHIVE_S3_BUCKETS_ENV, raising=False)
    message = thief(tmp_path, archive__location="s3://payroll/exports")
    assert "bucket 'payroll' is not one the operator allows archives in (allowed: none)" in message
    assert settings.ARCHIVE_S3_BUCKETS_ENV in message
    monkeypatch.setenv(settings.ARCHIVE_S3_BUCKETS_ENV, "landing, payroll/public")
    message = thief(tmp_path, archive__location="s3://payroll/exports")
    assert "(allowed: landing, payroll/public)" in message
    assert thief_loads(tmp_path, archive__location="s3://payroll/public/clicks").archive.s3 == (
        "payroll",
        "public/clicks",
    )
    assert "is not one the operator allows" in thief(tmp_path, archive__location="s3://payroll/publicity")


def test_an_s3_archive_never_reads_the_warehouse(tmp_path, monkeypatch):
    monkeypatch.setenv(settings.ARCHIVE_S3_BUCKETS_ENV, "lakehouse")
    monkeypatch.setenv(settings.WAREHOUSE_ENV, "s3://lakehouse/warehouse")
    for location in (
        "s3://lakehouse/warehouse/raw/victim_events",
        "s3://lakehouse",
        "s3://lakehouse/warehouse",
    ):
        assert "overlaps the warehouse the platform writes" in thief(tmp_path, archive__location=location)
    assert thief_loads(tmp_path, archive__location="s3://lakehouse/landing").archive.s3 == (
        "lakehouse",
        "landing",
    )


def test_an_s3_bucket_withdrawn_by_the_operator_is_refused_when_the_archive_opens(monkeypatch):
    monkeypatch.setenv(settings.ARCHIVE_S3_BUCKETS_ENV, "landing")
    spec = StreamSpec.model_validate(mutated(name="reader", archive__location="s3://landing/clicks"))
    monkeypatch.setenv(settings.ARCHIVE_S3_BUCKETS_ENV, "elsewhere")
    with pytest.raises(ValueError, match="bucket 'landing' is not one the operator allows"):
        archive_for(spec)
