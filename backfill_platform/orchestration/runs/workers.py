"""Who runs a run: the host, pid and start time of its worker process, recorded as a run tag.

Dagster's default run launcher cannot tell whether a run's worker process is still alive, so a run
killed with SIGKILL stays STARTED forever and keeps its pool slots. Every run of this code location
records its worker here (the executor does it before any step), which lets run monitoring, a waiting
run and the CLI tell a dead run from a slow one.
"""

from __future__ import annotations

import enum
import socket
from dataclasses import dataclass

import psutil
from dagster import DagsterRun

WORKER_TAG = "backfill_platform/run_worker"
# A recycled pid has another start time; the process table stores it with 1/100 s resolution.
START_TIME_TOLERANCE_SECONDS = 1.0


class Liveness(enum.Enum):
    ALIVE = "alive"
    GONE = "gone"
    # On another host (or never recorded): this process cannot look, so it must not judge.
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class RunWorker:
    host: str
    pid: int
    started: float

    @classmethod
    def current(cls) -> RunWorker:
        process = psutil.Process()
        return cls(host=socket.gethostname(), pid=process.pid, started=process.create_time())

    @classmethod
    def of_run(cls, run: DagsterRun) -> RunWorker | None:
        value = run.tags.get(WORKER_TAG)
        if not value:
            return None
        host, pid, started = value.rsplit(" ", 2)
        return cls(host=host, pid=int(pid), started=float(started))

    def tag_value(self) -> str:
        return f"{self.host} {self.pid} {self.started:.2f}"

    def liveness(self) -> Liveness:
        if self.host != socket.gethostname():
            return Liveness.UNKNOWN
        try:
            process = psutil.Process(self.pid)
            if abs(process.create_time() - self.started) > START_TIME_TOLERANCE_SECONDS:
                return Liveness.GONE  # the pid now belongs to another process
            # A killed child of a live parent lingers as a zombie until the parent reaps it.
            if process.status() == psutil.STATUS_ZOMBIE:
                return Liveness.GONE
        except psutil.NoSuchProcess:
            return Liveness.GONE
        return Liveness.ALIVE

    def __str__(self) -> str:
        return f"pid {self.pid} on {self.host}"
