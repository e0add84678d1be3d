"""What every test with a server or a subprocess needs: a free port, a process stopped, a condition polled.

One home each, so a server fixture, a CLI run and a watch of the daemon wait and stop the same way: a poll
with a deadline that fails naming what it waited for (never a bare `sleep`), and a stop that ends a process
group's children too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from typing import TypeVar

import pytest

# The one free port of the tools and the tests.
from backfill_platform.devtools.tool_process import free_port as free_port

T = TypeVar("T")

# SIGTERM first: `dagster dev` and the Spark cluster's scripts shut their children down on it.
DEFAULT_STOP_SECONDS = 30


def stop(process: subprocess.Popen, timeout: float = DEFAULT_STOP_SECONDS) -> None:
    """End `process`: its whole group when it leads one (`start_new_session=True`: webserver, daemon, code
    server and runs; a cluster's JVMs), else itself; SIGTERM, then SIGKILL after `timeout` seconds."""
    if process.poll() is not None:
        return
    leads_group = _leads_own_group(process.pid)
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10)):
        try:
            if leads_group:
                os.killpg(process.pid, sig)
            else:
                process.send_signal(sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def kill(process: subprocess.Popen) -> None:
    """SIGKILL `process` at once and reap it (a fault the test injects, or a run it no longer needs)."""
    if process.poll() is None:
        process.kill()
        process.wait()


def _leads_own_group(pid: int) -> bool:
    try:
        return os.getpgid(pid) == pid
    except ProcessLookupError:
        return False


def wait_until(
    condition: Callable[[], T],
    *,
    timeout: float,
    every: float = 0.5,
    what: str | Callable[[], str],
    process: subprocess.Popen | None = None,
) -> T:
    """Poll `condition` every `every` seconds until it returns a truthy value, and return that value; after
    `timeout` seconds, or as soon as `process` (the one expected to bring the condition about) has exited,
    fail the test with `what` (a text, or a function that describes the state then)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if process is not None and process.poll() is not None:
            pytest.fail(f"the process exited with {process.returncode} first: {_told(what)}")
        if time.monotonic() >= deadline:
            pytest.fail(f"not within {timeout:.0f} s: {_told(what)}")
        time.sleep(every)


def _told(what: str | Callable[[], str]) -> str:
    return what() if callable(what) else what
