"""`make kafka-connect`: the devtools command that lands a topic in an Iceberg table with Iceberg's own sink.

Run as a user runs it (`python -m backfill_platform.devtools.kafka_connect`, the Makefile target's command, in
a subprocess) against the tests' broker and REST catalog (its warehouse in moto's S3), with a catalog token
set: it creates the topic, the control topic and the landing table, lands the records produced to the topic,
prints the topic, the table and the landing spec (never the token), and stops cleanly on Ctrl-C (SIGINT).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import yaml

from backfill_platform import settings
from backfill_platform.devtools.kafka_connect.iceberg_sink import control_topic_for
from backfill_platform.specs.archive_location import ArchiveSpec
from backfill_platform_tests.support.kafka_connect import (
    JsonRecord,
    produce_json,
    pyiceberg_catalog,
    wait_for_rows,
)
from backfill_platform_tests.support.processes import wait_until

TOPIC, TABLE = "clicks", "raw_landing.clicks"
# What a secret looks like to the masking (its variable's name says so): it must appear nowhere.
TOKEN = "tok-4f9c2e7a1b"
READY = "Ctrl-C stops it."


def test_make_kafka_connect_lands_a_topic_and_stops_on_ctrl_c(moto, rest_catalog, kafka, tmp_path: Path):
    env = {
        **os.environ,
        **moto.env(),
        settings.CATALOG_URI_ENV: rest_catalog.uri,
        settings.WAREHOUSE_ENV: rest_catalog.warehouse,
        settings.CATALOG_TOKEN_ENV: TOKEN,
        settings.KAFKA_BOOTSTRAP_ENV: kafka.bootstrap,
        "PYTHONUNBUFFERED": "1",
    }
    state_dir = tmp_path / "connect"
    command = [sys.executable, "-m", "backfill_platform.devtools.kafka_connect"]
    command += ["--topic", TOPIC, "--table", TABLE, "--port", "0", "--state-dir", str(state_dir)]
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    output: list[str] = []
    # The pipe is read on a thread: the test polls the lines without blocking on a read.
    reader = threading.Thread(target=lambda: output.extend(process.stdout), daemon=True)
    reader.start()
    try:
        wait_until(
            lambda: any(READY in line for line in output),
            timeout=180,
            every=0.2,
            what=lambda: f"the worker's banner; output so far:\n{''.join(output)}",
            process=process,
        )
        events = [{"event_id": f"e{i}", "event_time": f"2026-10-01T0{i}:00:00Z"} for i in range(5)]
        produce_json(
            kafka.bootstrap,
            TOPIC,
            [JsonRecord({"payload": json.dumps(event)}, key=event["event_id"]) for event in events],
        )
        catalog = pyiceberg_catalog(rest_catalog.uri, rest_catalog.warehouse, moto)
        wait_for_rows(catalog, TABLE, len(events), timeout=120)
        rows = catalog.load_table(TABLE).scan().to_arrow().to_pylist()
        assert sorted(json.loads(row["payload"])["event_id"] for row in rows) == [
            e["event_id"] for e in events
        ]
        assert {row["_kafka_metadata_topic"] for row in rows} == {TOPIC}
        assert sorted(row["_kafka_metadata_offset"] for row in rows) == list(range(len(events)))

        # Ctrl-C in a terminal signals the whole foreground group: the command and its worker's JVM.
        os.killpg(process.pid, signal.SIGINT)
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    reader.join(timeout=10)
    text = "".join(output)
    assert f"topic {TOPIC!r}" in text and f"table {TABLE}" in text, text
    assert f"created topic {TOPIC} (1 partition), topic {control_topic_for(TOPIC)}" in text, text
    assert TOKEN not in text
    assert TOKEN not in (state_dir / "connect.log").read_text()
    # The printed archive block is a valid spec of the table it landed.
    block = text[text.index("  archive:") :].split(READY)[0]
    archive = ArchiveSpec.model_validate(yaml.safe_load(block)["archive"])
    assert (archive.iceberg_table, archive.payload_column) == (TABLE, "payload")
    assert archive.kafka_metadata is not None and archive.kafka_metadata.topic == TOPIC
    assert "Traceback" not in text
