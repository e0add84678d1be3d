"""One writer at a time on the embedded tier's SQLite catalog, across processes.

SQLite takes one writer; two runs committing at once fail inside Iceberg's JDBC catalog with
`SQLITE_BUSY_SNAPSHOT` (after leaving data files behind) instead of waiting. The embedded tier
therefore serializes whole runs (and the CLI's writing commands) on an advisory `flock` beside the
catalog database. The kernel releases it when its holder dies, however it dies, so a killed run never
blocks the next one. The lock file names its holder, so a waiting run can say what it waits for.
The team tier (PostgreSQL catalog) takes no such lock: Iceberg's optimistic commits and the pools
fence its writers.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from backfill_platform.lakehouse.resources import sqlite_database


def lock_path_for(jdbc_uri: str) -> Path | None:
    """The lock file of an embedded (SQLite) catalog; None for catalogs that take concurrent writers."""
    database = sqlite_database(jdbc_uri)
    return None if database is None else database.with_name(database.name + ".writer.lock")


class CatalogWriterLock:
    """A non-blocking, holder-describing `flock` on one file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def try_acquire(self, holder: dict[str, str]) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({**holder, "pid": str(os.getpid()), "since": _now()}).encode())
        self._fd = fd
        return True

    def holder(self) -> str:
        """Who holds the lock, as its holder described itself (best effort: it may just have left)."""
        try:
            fields = json.loads(self.path.read_text() or "{}")
        except (OSError, ValueError):
            return "another process"
        return ", ".join(f"{key} {value}" for key, value in fields.items()) or "another process"

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


@contextmanager
def catalog_writer(
    jdbc_uri: str, holder: dict[str, str], say=print, poll_seconds: float = 1.0
) -> Iterator[None]:
    """Hold the embedded catalog's writer lock for the block (a no-op on other catalogs), waiting for
    it as long as another live writer has it and saying so once a minute."""
    path = lock_path_for(jdbc_uri)
    if path is None:
        yield
        return
    lock = CatalogWriterLock(path)
    waited_since, last_said = time.monotonic(), None
    while not lock.try_acquire(holder):
        if last_said is None or time.monotonic() - last_said >= 60:
            say(
                f"waiting for the embedded catalog (SQLite takes one writer at a time), held by {lock.holder()}"
            )
            last_said = time.monotonic()
        time.sleep(poll_seconds)
    if last_said is not None:
        say(f"got the embedded catalog after {time.monotonic() - waited_since:.0f} s")
    try:
        yield
    finally:
        lock.release()


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
