"""What the hostile-input probes share (issue 30): the demo dataset to mutate, a team's project whose load
must refuse, a sentinel that no probe may create, and archives and YAML files built to be hostile; for secrets
(issue 59), a REST catalog that echoes its request's headers and a search of every byte under a folder."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from backfill_platform.components.registry import Project, demo_spec_data
from backfill_platform.specs.yaml_guard import SpecError
from backfill_platform_tests.support.projects import defs_folder, load_project, write_project
from backfill_platform_tests.support.specs import mutated, write_component

DATASET = demo_spec_data("views_per_title")
# What a probe must never create: `reflect`/`java_method` probes name it, and each test checks it is absent.
SENTINEL = Path("/tmp/issue30_probe_ran")


def dataset(**changes) -> dict:
    spec = yaml.safe_load(yaml.safe_dump(DATASET))
    spec.update(changes)
    return spec


def project_with(parent: Path, components: dict[str, dict]) -> Project:
    """A team's project (`write_project`) holding each spec of `components` as the component instance
    `defs/<folder>/defs.yaml`: the folder is named apart from the spec, so a hostile name stays a value."""
    project = write_project(parent, [])
    for folder, spec in components.items():
        write_component(defs_folder(project.root), folder, spec)
    return project


def component_file(project: Project, folder: str) -> Path:
    """The `defs.yaml` of the project's component instance in `defs/<folder>`."""
    return defs_folder(project.root) / folder / "defs.yaml"


def refused(project: Project, folder: str) -> str:
    """The project's refusal as it loads: one message, beginning with the `defs.yaml` of `folder`."""
    with pytest.raises(SpecError) as error:
        load_project(project)
    message = str(error.value)
    assert message.startswith(f"{component_file(project, folder)}: "), message
    return message


def refused_dataset(parent: Path, data: dict) -> str:
    """The refusal of a project holding the demo stream and `data`, naming the dataset's file."""
    return refused(project_with(parent, {"playback": mutated(), "views": data}), "views")


@pytest.fixture(autouse=True)
def nothing_outside(tmp_path):
    """No probe leaves the sentinel behind or a file in the working directory."""
    SENTINEL.unlink(missing_ok=True)
    before = set(os.listdir("."))
    yield
    assert not SENTINEL.exists()
    # Dagster's own telemetry folders appear in the working directory on a process's first run.
    assert set(os.listdir(".")) - DAGSTER_TELEMETRY == before - DAGSTER_TELEMETRY


DAGSTER_TELEMETRY = {".telemetry", "logs"}


def write_yaml(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


HOST_LINE = '{"event_id": "host-file-line", "event_time": "2026-10-01T03:00:00Z"}\n'


def hostile_archive(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """An archive whose hour folders hold links out of the root, special files and a broken link beside
    one ordinary file and one link that stays inside; returns the root and each probe's expected reason."""
    import stat

    from backfill_platform.pipeline.archive.boundary import REFUSED

    host = tmp_path / "host"
    (host / "hour").mkdir(parents=True)
    (host / "secret.jsonl").write_text(HOST_LINE)
    (host / "hour" / "x.jsonl").write_text(HOST_LINE)
    root = tmp_path / "archive"
    hour = root / "2026" / "10" / "01" / "03"
    hour.mkdir(parents=True)
    (hour / "good.jsonl").write_text('{"event_id": "a", "event_time": "2026-10-01T03:00:00Z"}\n')
    (root / "2026" / "10" / "01" / "inside.jsonl").write_text("{}\n")
    (hour / "inside-link.jsonl").symlink_to(root / "2026" / "10" / "01" / "inside.jsonl")
    (hour / "out-link.jsonl").symlink_to(host / "secret.jsonl")
    (hour / "dev-zero.jsonl").symlink_to("/dev/zero")
    (hour / "broken.jsonl").symlink_to(hour / "gone.jsonl")
    os.mkfifo(hour / "fifo.jsonl")
    (root / "2026" / "10" / "01" / "04").symlink_to(host / "hour")
    expected = {
        "2026/10/01/03/out-link.jsonl": "a symlink leading outside the archive root",
        "2026/10/01/03/dev-zero.jsonl": "a symlink leading outside the archive root",
        "2026/10/01/03/broken.jsonl": "a broken or looping symlink",
        "2026/10/01/03/fifo.jsonl": "a FIFO (named pipe), not a regular file",
        "2026/10/01/04": "a symlink leading outside the archive root",
    }
    try:  # a character device of the test's own (root may create one; others skip this probe)
        os.mknod(hour / "zero-device.jsonl", stat.S_IFCHR | 0o600, os.makedev(1, 5))
        expected["2026/10/01/03/zero-device.jsonl"] = "a character device, not a regular file"
    except PermissionError:
        pass
    return root, {name: REFUSED + why for name, why in expected.items()}


# --- secrets (issue 59) ----------------------------------------------------------------------------------


def bytes_holding(folder: Path, secrets: list[bytes]) -> list[str]:
    """Every file below `folder` whose bytes hold one of `secrets` (Dagster's SQLite storage included)."""
    found = []
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            found += [f"{path}: {secret!r}" for secret in secrets if secret in data]
    return found


@contextmanager
def echoing_catalog(config_answers: bool = False) -> Iterator[str]:
    """A careless Iceberg REST catalog on a free loopback port (its URL): every request it does not serve
    is answered HTTP 500 with an error body that echoes the request's headers, `Authorization` included.
    With `config_answers`, `GET /v1/config` answers as a catalog does (so clients go on to table calls)."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if config_answers and self.path.startswith("/v1/config"):
                code, body = 200, {"defaults": {}, "overrides": {}}
            else:
                echoed = f"cannot serve {self.command} {self.path} for {dict(self.headers)}"
                code, body = 500, {"error": {"message": echoed, "type": "ServerError", "code": 500}}
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_POST = do_HEAD = do_DELETE = do_GET

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
