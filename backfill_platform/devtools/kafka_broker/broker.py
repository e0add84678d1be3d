"""Start and stop a single-node Apache Kafka broker (KRaft: broker and controller in one JVM) on loopback.

Formatted afresh in its state folder (a new cluster id each time: a folder formatted for another id is
refused by Kafka), configured for one machine: replication factor 1 for the internal topics (consumer
offsets, transaction state), no automatic topic creation (a replay to a topic nobody created must fail, as
on a team's cluster), small thread pools and a small log-cleaner buffer (the default 128 MiB is allocated at
start and does not fit a small heap). It starts in about 3 to 7 s on two busy cores and uses ~150 MB.
"""

from __future__ import annotations

import base64
import subprocess
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from backfill_platform.devtools.kafka_broker.classpath import BROKER_CLASS, STORAGE_TOOL_CLASS, classpath
from backfill_platform.devtools.tool_jars import console_log4j2, java_binary
from backfill_platform.devtools.tool_process import free_port, stop_tool, wait_until_serving

STARTUP_TIMEOUT_SECONDS = 90
JAVA_OPTIONS = ("-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
# INFO for the broker, WARN for Raft and for the ~1,500 lines of configuration each component prints.
LOG4J2 = console_log4j2(
    {"raft": "org.apache.kafka.raft", "config": "org.apache.kafka.common.config.AbstractConfig"}
)


@dataclass(frozen=True)
class KafkaBroker:
    """A running broker: what `bootstrap.servers` takes, its log and process."""

    bootstrap: str
    port: int
    log: Path
    process: subprocess.Popen


def cluster_id() -> str:
    """Kafka's `Uuid` text: URL-safe base64 of 16 random bytes, unpadded; never starting with `-` (the
    storage tool's argument parser would read it as an option)."""
    while True:
        found = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not found.startswith("-"):
            return found


def server_properties(data: Path, port: int, controller_port: int, host: str = "127.0.0.1") -> str:
    return f"""\
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers={host}:{controller_port}
listeners=PLAINTEXT://{host}:{port},CONTROLLER://{host}:{controller_port}
advertised.listeners=PLAINTEXT://{host}:{port}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs={data}
num.partitions=1
auto.create.topics.enable=false
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
transaction.abort.timed.out.transaction.cleanup.interval.ms=2000
num.network.threads=2
num.io.threads=2
num.recovery.threads.per.data.dir=1
background.threads=2
log.cleaner.dedupe.buffer.size=4194304
"""


def _java(state_dir: Path, main: str, *args: str) -> list[str]:
    return [
        java_binary(),
        *JAVA_OPTIONS,
        f"-Dlog4j2.configurationFile={state_dir / 'log4j2.properties'}",
        "-cp",
        classpath(),
        main,
        *args,
    ]


@contextmanager
def kafka_broker(
    state_dir: Path, *, port: int = 0, env: Mapping[str, str] | None = None
) -> Iterator[KafkaBroker]:
    """A started broker for the block, stopped after it (also on error). A new state folder is formatted
    (`port` 0 picks a free loopback port); one a broker of this module already ran in is started again as
    it was (same cluster, ports and topics: a broker restarted after a stop)."""
    state_dir.mkdir(parents=True, exist_ok=True)
    data = state_dir / "data"
    properties = state_dir / "server.properties"
    log = state_dir / "kafka.log"
    if (data / "meta.properties").exists() and properties.exists():
        port = int(properties.read_text().split("PLAINTEXT://127.0.0.1:", 1)[1].split(",", 1)[0])
    else:
        if data.exists() and any(data.iterdir()):
            raise ValueError(f"{data} holds data of no broker this module formatted: give an empty folder")
        port = port or free_port()
        properties.write_text(server_properties(data, port, free_port()))
        (state_dir / "log4j2.properties").write_text(LOG4J2)
        _format(state_dir, properties, env)
    with log.open("ab") as out:
        process = subprocess.Popen(
            _java(state_dir, BROKER_CLASS, str(properties)),
            stdout=out,
            stderr=subprocess.STDOUT,
            env=dict(env) if env is not None else None,
        )
    try:
        bootstrap = f"127.0.0.1:{port}"
        _wait_until_serving(process, bootstrap, log)
        yield KafkaBroker(bootstrap, port, log, process)
    finally:
        stop_tool(process, timeout=30)  # a clean shutdown takes about a second


def _format(state_dir: Path, properties: Path, env: Mapping[str, str] | None) -> None:
    formatted = subprocess.run(
        _java(
            state_dir, STORAGE_TOOL_CLASS, "format", "-t", cluster_id(), "-c", str(properties), "--standalone"
        ),
        capture_output=True,
        text=True,
        check=False,
        env=dict(env) if env is not None else None,
    )
    if formatted.returncode != 0:
        raise RuntimeError(
            f"formatting the Kafka broker's storage failed:\n{formatted.stdout}{formatted.stderr}"
        )


def _wait_until_serving(process: subprocess.Popen, bootstrap: str, log: Path) -> None:
    """Returns once the broker answers a metadata request naming itself; raises with the log's tail if it
    exits first or does not answer in time."""
    from confluent_kafka.admin import AdminClient

    # log_level 0: librdkafka would print every refused connection while the broker starts.
    admin = AdminClient(
        {
            "bootstrap.servers": bootstrap,
            "socket.connection.setup.timeout.ms": 1000,
            "reconnect.backoff.ms": 50,
            "reconnect.backoff.max.ms": 200,
            "log_level": 0,
        }
    )

    def serving() -> bool | None:
        try:
            return True if admin.list_topics(timeout=1.0).brokers else None
        except Exception:  # KafkaException (transport, timed out) until the listener is up: poll again
            return None

    wait_until_serving(
        process, serving, what="the Kafka broker", log=log, timeout=STARTUP_TIMEOUT_SECONDS, every=0.1
    )
