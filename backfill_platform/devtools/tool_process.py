"""A JVM tool's process beside the platform (Iceberg's REST catalog server, Kafka's broker, a Kafka Connect
worker): a free port for it, a wait until it serves, a stop. One home for the three tools, and for the
tests' free port (`backfill_platform_tests/support/processes.py`).
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on `host` that nothing listens on now (the OS's choice)."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def log_tail(log: Path, lines: int = 30) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def wait_until_serving(
    process: subprocess.Popen,
    serving: Callable[[], T | None],
    *,
    what: str,
    log: Path,
    timeout: float,
    every: float = 0.2,
) -> T:
    """Poll `serving` until it returns a value (not None), and return it. Raises RuntimeError with the log's
    tail if the process exits first, TimeoutError if `timeout` seconds pass; `what` names the tool."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited ({process.returncode}); {log}:\n{log_tail(log)}")
        answer = serving()
        if answer is not None:
            return answer
        time.sleep(every)
    raise TimeoutError(f"{what} did not serve within {timeout:g} s; {log}:\n{log_tail(log)}")


def stop_tool(process: subprocess.Popen, timeout: float) -> None:
    """SIGTERM (the tools shut down cleanly on it), then SIGKILL after `timeout` seconds; reaped either way."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
