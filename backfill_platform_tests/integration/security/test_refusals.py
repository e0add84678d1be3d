"""Every refusal a message, on real parts (issue 59, part 6): a REST catalog answering 500 on table calls,
`plan` on an S3 archive (moto's), `adopt` from a table that does not exist (Spark), and the time zones the
JVM knows (the list a spec's `partition_timezone` is checked against, compared with the running JVM's).
The refusals that need no server or Spark: unit/cli/test_refusals.py."""

from __future__ import annotations

import json
import threading
from datetime import date
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from backfill_platform import settings
from backfill_platform_tests.support.hostile import nothing_outside  # noqa: F401 - an autouse fixture
from backfill_platform_tests.support.projects import write_project
from backfill_platform_tests.support.specs import mutated

TOKEN = "issue59-fake-bearer-token"


class FailingCatalog(BaseHTTPRequestHandler):
    """A REST catalog that answers its config and fails every table call with a 500 whose body echoes the
    request's headers (as some proxies do)."""

    def do_GET(self) -> None:
        if self.path.startswith("/v1/config"):
            self._answer(200, {"defaults": {}, "overrides": {}})
        else:
            echoed = {k: v for k, v in self.headers.items()}
            self._answer(500, {"error": {"message": f"boom: {echoed}", "type": "ServerError", "code": 500}})

    do_POST = do_HEAD = do_GET

    def _answer(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def failing_catalog():
    server = ThreadingHTTPServer(("127.0.0.1", 0), FailingCatalog)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def cli(*args: str):
    from click.testing import CliRunner

    from backfill_platform.cli import main

    return CliRunner().invoke(main, list(args))


@pytest.mark.timeout(120)
def test_a_catalog_answering_500_on_table_calls_is_one_line_without_its_body(
    tmp_path, monkeypatch, failing_catalog
):
    relay = mutated(name="relay", archive={"iceberg_table": "landing.relay"})
    monkeypatch.chdir(write_project(tmp_path, [relay], demo=True).root)  # the CLI reads the project here
    monkeypatch.setenv(settings.CATALOG_URI_ENV, failing_catalog)
    monkeypatch.setenv(settings.CATALOG_TOKEN_ENV, TOKEN)
    for args in (
        ["status", "--dataset", "views_per_title"],
        ["plan", "--stream", "relay", "--start", "2026-10-01", "--end", "2026-10-02"],
    ):
        result = cli(*args)
        assert result.exit_code == 1, (args, result.output, result.exception)
        assert isinstance(result.exception, SystemExit), result.exception
        output = result.output.strip()
        assert output.startswith("Error: ") and "Traceback" not in output, output
        assert "answered" in output and "ServerError" in output, output
        assert TOKEN not in output and "boom" not in output, output


@pytest.mark.timeout(300)
def test_plan_reads_an_s3_archive(tmp_path, monkeypatch, moto):
    """docs/s3-and-replay.md: `plan` works on an S3 stream as on a folder."""
    root = tmp_path / "archive"
    hour = root / "2026" / "10" / "01" / "03"
    hour.mkdir(parents=True)
    lines = [f'{{"event_id":"e{i}","event_time":"2026-10-01T03:0{i}:00Z"}}' for i in range(3)]
    (hour / "part.jsonl").write_text("\n".join(lines) + "\n")
    assert moto.upload(root, "plan-archive", "relay") == 1
    archive = {"location": "s3://plan-archive/relay", "compression": "none"}
    project = write_project(tmp_path, [mutated(name="relay", archive=archive)])
    for name, value in moto.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(project.root)  # the CLI reads the project of its working directory
    monkeypatch.setenv(settings.ARCHIVE_S3_BUCKETS_ENV, "plan-archive")
    result = cli("plan", "--stream", "relay", "--start", "2026-10-01", "--end", "2026-10-02")
    assert result.exit_code == 0, (result.output, result.exception)
    output = " ".join(result.output.split())
    assert "read 1 distinct archive files" in output and "3 lines" in output
    # The bucket is the operator's: withdrawn, the same spec is refused before anything is listed.
    monkeypatch.setenv(settings.ARCHIVE_S3_BUCKETS_ENV, "elsewhere")
    refused = cli("plan", "--stream", "relay", "--start", "2026-10-01", "--end", "2026-10-02")
    assert refused.exit_code == 1 and "bucket 'plan-archive' is not one the operator allows" in refused.output


def test_adopt_from_a_missing_table_is_refused_before_anything_is_written(spark, data_dir):
    from backfill_platform.lakehouse.tables import table_exists
    from backfill_platform.pipeline.names import production_table
    from backfill_platform.pipeline.promotion.adopt import AdoptRefused, adopt
    from backfill_platform.specs.dataset import DatasetSpec
    from backfill_platform_tests.support.hostile import dataset

    spec = DatasetSpec.model_validate(dataset(name="adopt_missing_source"))
    with pytest.raises(AdoptRefused, match=r"--from 'legacy\.no_such_table': no such table in the catalog"):
        adopt(spark, spec, "legacy.no_such_table", date(2026, 10, 1), date(2026, 10, 2), "probe")
    assert not table_exists(spark, production_table(spark, spec))


def test_the_jvm_zone_list_is_the_running_jvms(spark):
    from backfill_platform.specs.jvm_zones import JVM_TIME_ZONES

    running = set(spark._jvm.java.time.ZoneId.getAvailableZoneIds())
    assert running == set(JVM_TIME_ZONES), (
        "regenerate backfill_platform/specs/jvm_zones.py: "
        f"missing {sorted(running - JVM_TIME_ZONES)}, extra {sorted(JVM_TIME_ZONES - running)}"
    )
    assert "localtime" not in running and "Factory" not in running
