"""Start and stop Apache Iceberg's REST catalog server (`RESTCatalogServer`) on this machine.

The server keeps its catalog in a SQLite file (a JDBC catalog behind the REST routes) and writes table
metadata into the warehouse it is given: a local folder, or `s3://bucket/prefix` through Iceberg's S3FileIO
with the endpoint given here and the AWS credentials of its environment (the default chain: never a
property, since the server logs every property at start). It is configured as its Docker image is, through
`CATALOG_*` variables (`CATALOG_` dropped, `__` -> `-`, `_` -> `.`).

It listens on 127.0.0.1 unless told another address (`host`; `--host` of `make rest-catalog`), like
`make ui` and `make kafka`: the server is unauthenticated. Iceberg's `RESTCatalogServer` itself has no host
setting (Jetty binds every interface), so it is started through `BoundRestCatalogServer.java` beside this
module, run as a single-file source program, which builds the same catalog and servlet on a bound connector.
It answers every missing table with a stack trace in its log (harmless).
"""

from __future__ import annotations

import os
import re
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from backfill_platform.devtools.rest_catalog.classpath import classpath
from backfill_platform.devtools.tool_jars import java_binary
from backfill_platform.devtools.tool_process import stop_tool, wait_until_serving

STARTUP_TIMEOUT_SECONDS = 90
# Jetty's line once it listens: `Started oejs.ServerConnector@…{HTTP/1.1, (http/1.1)}{0.0.0.0:36657}`.
_LISTENING = re.compile(r"Started \S*ServerConnector@\S*\{[^}]*\}\{[^}]*:(\d+)\}")
# A small heap and the client compiler: it serves a few requests a second and starts in about 2 s.
JAVA_OPTIONS = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
# The launcher that binds one address (a single-file Java source program, compiled in memory at start).
LAUNCHER = Path(__file__).resolve().parent / "BoundRestCatalogServer.java"
LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class RestCatalogServer:
    """A running server: its endpoint (what BACKFILL_PLATFORM_CATALOG_URI takes) and its log."""

    uri: str
    port: int
    host: str
    warehouse: str
    log: Path
    process: subprocess.Popen


def server_env(
    state_dir: Path,
    warehouse: str,
    s3_endpoint: str = "",
    region: str = "",
    port: int = 0,
    host: str = LOOPBACK,
) -> dict[str, str]:
    """The `CATALOG_*` settings of a server whose catalog file is in `state_dir`, and the address it binds."""
    env = {
        "REST_HOST": host,
        "CATALOG_REST_PORT": str(port),
        "CATALOG_CATALOG__IMPL": "org.apache.iceberg.jdbc.JdbcCatalog",
        "CATALOG_URI": f"jdbc:sqlite:{state_dir / 'rest-catalog.db'}",
        # A table in a namespace that does not exist is refused (as Spark's JDBC catalog does).
        "CATALOG_JDBC_STRICT__MODE": "true",
        "CATALOG_JDBC_USER": "catalog",
        "CATALOG_JDBC_PASSWORD": "unused-by-sqlite",
        "CATALOG_WAREHOUSE": warehouse,
        # No instance metadata service to probe when credentials are missing: fail at once instead.
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    if warehouse.startswith("s3://"):
        env["CATALOG_IO__IMPL"] = "org.apache.iceberg.aws.s3.S3FileIO"
    if s3_endpoint:
        env["CATALOG_S3_ENDPOINT"] = s3_endpoint
        env["CATALOG_S3_PATH__STYLE__ACCESS"] = "true"
    if region:
        env["CATALOG_CLIENT_REGION"] = region
    return env


@contextmanager
def rest_catalog_server(
    state_dir: Path,
    warehouse: str,
    *,
    s3_endpoint: str = "",
    region: str = "",
    port: int = 0,
    host: str = LOOPBACK,
    env: Mapping[str, str] | None = None,
) -> Iterator[RestCatalogServer]:
    """A server for the block, stopped after it (also on error). `port` 0 lets Jetty choose a free port;
    `host` is the address it binds (loopback unless told otherwise: it is unauthenticated); `env` is the
    process environment (default: this one's), where AWS credentials come from."""
    state_dir.mkdir(parents=True, exist_ok=True)
    log = state_dir / "rest-catalog.log"
    command = [java_binary(), *JAVA_OPTIONS, "-cp", classpath(), str(LAUNCHER)]
    full_env = {**(env if env is not None else os.environ)}
    full_env.update(server_env(state_dir, warehouse, s3_endpoint, region, port, host))
    with log.open("ab") as out:
        process = subprocess.Popen(command, env=full_env, stdout=out, stderr=subprocess.STDOUT)
    try:
        bound = _wait_until_serving(process, log, host)
        yield RestCatalogServer(f"http://{_url_host(host)}:{bound}", bound, host, warehouse, log, process)
    finally:
        stop_tool(process, timeout=20)


def _url_host(host: str) -> str:
    """Where a client on this machine reaches a server bound to `host` (every interface: loopback)."""
    if host in ("", "0.0.0.0", "::"):
        return LOOPBACK
    return f"[{host}]" if ":" in host else host


def _wait_until_serving(process: subprocess.Popen, log: Path, host: str = LOOPBACK) -> int:
    """The port once `GET /v1/config` answers 200; raises with the log's tail if the server exits first."""
    port: int | None = None

    def serving() -> int | None:
        nonlocal port
        if port is None:
            found = _LISTENING.search(log.read_text(errors="replace"))
            port = int(found.group(1)) if found else None
        return port if port is not None and _answers(f"http://{_url_host(host)}:{port}/v1/config") else None

    return wait_until_serving(
        process, serving, what="the REST catalog server", log=log, timeout=STARTUP_TIMEOUT_SECONDS
    )


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False
