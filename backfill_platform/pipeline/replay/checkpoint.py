"""The replay checkpoint: a JSON file, replaced atomically after every acknowledged batch.

It names the replay it belongs to (stream, range, target, events snapshot) and its position in the
deterministic order (event_time, event_id): the count of events acknowledged and the key of the last
one. A killed replay resumes after that key, so at most the batch in flight is sent again.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

FORMAT = 1


class CheckpointMismatch(ValueError):
    """The checkpoint file belongs to another replay."""


@dataclass
class Checkpoint:
    stream: str
    start: str  # first event-time day (ISO date)
    end: str  # day after the last one (exclusive)
    target: str  # the Kinesis stream written to
    snapshot_id: int | None  # events snapshot read: a resumed replay reads exactly the same rows
    total: int  # events of the range in that snapshot
    delivered: int = 0  # events acknowledged by the target, of the prefix of the order passed
    last_event_time: str | None = None  # key of the last acknowledged event (ISO-8601, microseconds)
    last_event_id: str | None = None
    batches: int = 0
    done: bool = False
    # Events of the prefix passed but not sent: their subject had an erasure request when their batch was
    # sent (`replay/erasure.py`). The position is delivered + erased; the key above is the last one passed.
    erased: int = 0
    requests_snapshot: int | None = None  # the erasure requests' snapshot the last batch honored
    updated_at: str = ""
    format: int = FORMAT

    def identity(self) -> dict[str, str]:
        return {"stream": self.stream, "start": self.start, "end": self.end, "target": self.target}

    def check_belongs_to(self, stream: str, start: str, end: str, target: str, path: Path) -> None:
        wanted = {"stream": stream, "start": start, "end": end, "target": target}
        if self.identity() != wanted:
            differing = ", ".join(
                f"{key} {self.identity()[key]!r} (not {value!r})"
                for key, value in wanted.items()
                if self.identity()[key] != value
            )
            raise CheckpointMismatch(
                f"checkpoint {path} belongs to another replay: {differing}; give another --checkpoint "
                "path, or delete this one to start that replay over"
            )

    @property
    def position(self) -> int:
        """Events of the order passed: sent, or skipped as erased."""
        return self.delivered + self.erased

    @property
    def last_key(self) -> tuple[datetime, str] | None:
        if self.last_event_time is None or self.last_event_id is None:
            return None
        return datetime.fromisoformat(self.last_event_time), self.last_event_id


def load(path: Path) -> Checkpoint | None:
    """The checkpoint at `path`, or None when there is none yet."""
    try:
        raw = json.loads(_read_regular(Path(path)))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        raise CheckpointMismatch(f"checkpoint {path} is not readable JSON: {error}") from error
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise CheckpointMismatch(f"checkpoint {path} is not a replay checkpoint of format {FORMAT}")
    try:
        return Checkpoint(**raw)
    except TypeError as error:
        raise CheckpointMismatch(f"checkpoint {path} has unexpected fields: {error}") from error


def _read_regular(path: Path) -> str:
    """The text of a regular file; a FIFO or device named as the checkpoint is refused, not waited on
    (opened without blocking, judged by what was opened)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise CheckpointMismatch(f"checkpoint {path} is not a regular file (a FIFO, device or folder)")
    with os.fdopen(fd, "rb") as handle:
        return handle.read(1 << 20).decode("utf-8")


def save(checkpoint: Checkpoint, path: Path) -> None:
    """Write the checkpoint atomically: a temporary file in the same folder, fsynced, then renamed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    checkpoint.updated_at = datetime.now(UTC).isoformat(timespec="seconds")
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(asdict(checkpoint), handle, indent=1)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
