"""Listing an archive by ingestion hour.

Readers only ever ask "which files were ingested in these hours?", so the listing is an interface with
a local implementation; an object-store implementation answers the same question.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Protocol

from backfill_platform import settings
from backfill_platform.specs.stream import StreamSpec

HOUR = timedelta(hours=1)
_SUFFIXES = {"gzip": (".jsonl.gz", ".json.gz", ".gz"), "none": (".jsonl", ".json")}


@dataclass(frozen=True)
class ArchiveFile:
    path: str  # what Spark reads (a local path, or an object-store URI)
    name: str  # path relative to the archive root
    ingestion_hour: datetime
    size: int
    modified_ns: int


class Archive(Protocol):
    def list_hour(self, hour: datetime) -> list[ArchiveFile]: ...


@dataclass(frozen=True)
class LocalArchive:
    """An archive in a local folder, in hourly ingestion folders named by `layout` (strftime)."""

    root: Path
    layout: str
    compression: str = "gzip"

    def list_hour(self, hour: datetime) -> list[ArchiveFile]:
        folder = self.root / hour.strftime(self.layout)
        if not folder.is_dir():
            return []
        files = []
        for path in sorted(folder.iterdir()):
            if path.is_file() and path.name.endswith(_SUFFIXES[self.compression]):
                stat = path.stat()
                files.append(
                    ArchiveFile(
                        path=str(path.resolve()),
                        name=str(path.relative_to(self.root)),
                        ingestion_hour=hour,
                        size=stat.st_size,
                        modified_ns=stat.st_mtime_ns,
                    )
                )
        return files


def archive_for(spec: StreamSpec) -> LocalArchive:
    location = Path(spec.archive.location)
    root = location if location.is_absolute() else settings.data_dir() / location
    return LocalArchive(root=root, layout=spec.archive.layout, compression=spec.archive.compression)


def hours(start: datetime, end: datetime) -> list[datetime]:
    """Hour starts h with start <= h < end (start is floored to the hour)."""
    current = start.replace(minute=0, second=0, microsecond=0)
    result = []
    while current < end:
        result.append(current)
        current += HOUR
    return result


def list_files(archive: Archive, start: datetime, end: datetime) -> list[ArchiveFile]:
    return [f for hour in hours(start, end) for f in archive.list_hour(hour)]


def manifest_fingerprint(files: list[ArchiveFile]) -> str:
    """Changes when a file is added, removed or replaced (name, size and modification time)."""
    digest = hashlib.sha256()
    for f in sorted(files, key=lambda f: f.name):
        digest.update(f"{f.name}\0{f.size}\0{f.modified_ns}\n".encode())
    return digest.hexdigest()[:16]
