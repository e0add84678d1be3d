"""Start and stop a Kafka Connect worker (`ConnectStandalone`) on loopback, with Iceberg's sink plugin loaded.

The worker starts with no connector: a test adds one through the worker's REST API (`put_connector`), as an
operator would; a standalone worker keeps no connector across a restart (give it again: the sink resumes
from the offsets it committed). It converts keys and values with the JsonConverter without schemas
(schemaless JSON: a value arrives in the sink as a map; a key must be JSON too), keeps its source offsets in
a file of its state folder (unused by Iceberg's sink, which commits its consumer group's offsets in its own
Kafka transactions, but required by a standalone worker), and finds the plugin by its ServiceLoader
manifests only (`plugin.discovery=service_load`: 2 to 5 s to start instead of 17 s for a scan of every
class of its 51 jars).

AWS credentials for S3FileIO come from the process environment (`env`: the AWS SDK's default chain), never
from a connector's configuration, which the worker logs and serves on its REST API.
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backfill_platform.devtools.kafka_connect.classpath import WORKER_CLASS, classpath, plugin_path
from backfill_platform.devtools.tool_jars import console_log4j2, java_binary
from backfill_platform.devtools.tool_process import free_port, log_tail, stop_tool, wait_until_serving

# Connector settings may name an environment variable instead of a value (`${env:NAME}`): the worker resolves
# it when the connector starts, and its log and REST API show the reference, never the secret. Only the
# platform's variables: a connector's configuration cannot read the worker's AWS credentials this way.
ENV_CONFIG_PROVIDER = "env"
ENV_CONFIG_PROVIDER_ALLOWLIST = "BACKFILL_PLATFORM_.*"

STARTUP_TIMEOUT_SECONDS = 120
STOP_TIMEOUT_SECONDS = 30
SINK_CONNECTOR_CLASS = "org.apache.iceberg.connect.IcebergSinkConnector"
METADATA_TRANSFORM_CLASS = "org.apache.iceberg.connect.transforms.KafkaMetadataTransform"
# Parquet buffers a row group per open data file (one per table partition being written): 512 MiB is ample
# for a test's volume. The client compiler alone: the worker is short-lived.
JAVA_OPTIONS = ("-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
# INFO for the worker and the sink (its commits), WARN for the configuration each client prints at start
# and for the REST server's access log (a line per request: a test polls a connector's status).
LOG4J2 = console_log4j2(
    {
        "config": "org.apache.kafka.common.config.AbstractConfig",
        "rest": "org.apache.kafka.connect.runtime.rest.RestServer",
    }
)


def worker_properties(state_dir: Path, bootstrap: str, port: int, plugins: Path) -> str:
    return f"""\
bootstrap.servers={bootstrap}
key.converter=org.apache.kafka.connect.json.JsonConverter
key.converter.schemas.enable=false
value.converter=org.apache.kafka.connect.json.JsonConverter
value.converter.schemas.enable=false
offset.storage.file.filename={state_dir / "connect.offsets"}
offset.flush.interval.ms=1000
plugin.path={plugins}
plugin.discovery=service_load
listeners=http://127.0.0.1:{port}
config.providers={ENV_CONFIG_PROVIDER}
config.providers.{ENV_CONFIG_PROVIDER}.class=org.apache.kafka.common.config.provider.EnvVarConfigProvider
config.providers.{ENV_CONFIG_PROVIDER}.param.allowlist.pattern={ENV_CONFIG_PROVIDER_ALLOWLIST}
"""


def env_reference(variable: str) -> str:
    """A connector setting's value read by the worker from its environment variable `variable` when the
    connector starts (its log and REST API show this reference, not the value)."""
    return f"${{{ENV_CONFIG_PROVIDER}:{variable}}}"


@dataclass(frozen=True)
class ConnectWorker:
    """A running worker: its REST endpoint, its log and process."""

    url: str
    port: int
    log_path: Path
    process: subprocess.Popen

    def put_connector(self, name: str, config: Mapping[str, str]) -> dict[str, Any]:
        """Create the connector `name` or replace its configuration (`PUT /connectors/<name>/config`);
        returns the worker's answer (its configuration and tasks). Raises with the worker's message when
        it refuses the configuration."""
        return _request("PUT", f"{self.url}/connectors/{_quote(name)}/config", {**config, "name": name})

    def connectors(self) -> list[str]:
        """The names of the worker's connectors."""
        return _request("GET", f"{self.url}/connectors")

    def status(self, name: str) -> dict[str, Any]:
        """The connector's and its tasks' states (`RUNNING`, `FAILED` with the task's `trace`, ...)."""
        return _request("GET", f"{self.url}/connectors/{_quote(name)}/status")

    def wait_until_running(self, name: str, timeout: float = 60) -> dict[str, Any]:
        """The connector's status once it and every task run. Raises RuntimeError with the trace of a
        connector or task that failed, or if the worker exits; TimeoutError after `timeout` seconds."""

        def running() -> dict[str, Any] | None:
            try:
                status = self.status(name)
            except RuntimeError:  # 404 until the worker has created the connector
                return None
            parts = [status.get("connector", {}), *status.get("tasks", [])]
            for part in parts:
                if part.get("state") == "FAILED":
                    raise RuntimeError(f"connector {name} failed; {self.log_path}:\n{part.get('trace', '')}")
            # No task yet: the connector runs before the worker has assigned its tasks.
            states = {part.get("state") for part in parts}
            return status if len(parts) > 1 and states == {"RUNNING"} else None

        return wait_until_serving(
            self.process, running, what=f"connector {name}", log=self.log_path, timeout=timeout
        )

    def delete_connector(self, name: str) -> None:
        """Stop the connector and forget it (its consumer group and table stay as they are)."""
        _request("DELETE", f"{self.url}/connectors/{_quote(name)}")


@contextmanager
def connect_worker(
    state_dir: Path, bootstrap: str, port: int = 0, env: Mapping[str, str] | None = None
) -> Iterator[ConnectWorker]:
    """A started worker for the block, stopped after it (also on error): SIGTERM (connectors stop, their
    tasks close their clients), then a kill after `STOP_TIMEOUT_SECONDS`. `bootstrap` is the broker's
    `bootstrap.servers`; `port` 0 picks a free loopback port for the REST API; `env` is the process
    environment (default: this one's), where AWS credentials come from."""
    state_dir.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    properties = state_dir / "worker.properties"
    log_path = state_dir / "connect.log"
    plugins = plugin_path(state_dir)
    properties.write_text(worker_properties(state_dir, bootstrap, port, plugins))
    (state_dir / "log4j2.properties").write_text(LOG4J2)
    command = [
        java_binary(),
        *JAVA_OPTIONS,
        f"-Dlog4j2.configurationFile={state_dir / 'log4j2.properties'}",
        "-cp",
        classpath(),
        WORKER_CLASS,
        str(properties),
    ]
    # No instance metadata service to probe when credentials are missing: fail at once instead.
    full_env = {**(env if env is not None else os.environ), "AWS_EC2_METADATA_DISABLED": "true"}
    with log_path.open("ab") as out:
        process = subprocess.Popen(command, env=full_env, stdout=out, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_until_serving(process, url, log_path, plugins)
        yield ConnectWorker(url, port, log_path, process)
    finally:
        stop_tool(process, timeout=STOP_TIMEOUT_SECONDS)


def _wait_until_serving(process: subprocess.Popen, url: str, log: Path, plugins: Path) -> None:
    """Returns once the REST API lists the sink connector and the metadata transform among its plugins;
    raises with the log's tail if the worker exits first or does not get there in time."""
    wanted = {SINK_CONNECTOR_CLASS, METADATA_TRANSFORM_CLASS}

    def serving() -> bool | None:
        try:
            answer = _request("GET", f"{url}/connector-plugins?connectorsOnly=false", timeout=2)
        except (OSError, RuntimeError):  # refused until the REST server listens
            return None
        if answer is None:  # an empty body: not serving yet
            return None
        listed = {plugin["class"] for plugin in answer}
        if not wanted <= listed:
            raise RuntimeError(
                f"the Kafka Connect worker does not list {sorted(wanted - listed)} among its plugins "
                f"(plugin.path {plugins}); {log}:\n{log_tail(log)}"
            )
        return True

    wait_until_serving(
        process, serving, what="the Kafka Connect worker", log=log, timeout=STARTUP_TIMEOUT_SECONDS
    )


def _request(method: str, url: str, body: Mapping[str, Any] | None = None, timeout: float = 30) -> Any:
    """One call of the worker's REST API: JSON in and out. An HTTP error raises with the worker's message."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Accept", "application/json")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            text = response.read()
    except urllib.error.HTTPError as error:
        detail = error.read().decode(errors="replace")
        raise RuntimeError(f"{method} {url}: HTTP {error.code}: {detail}") from None
    return json.loads(text) if text else None


def _quote(name: str) -> str:
    return urllib.parse.quote(name, safe="")
