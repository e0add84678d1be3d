"""Listing an archive by ingestion hour, and finding what no hour lists.

Readers only ever ask "which files were ingested in these hours?", so the listing is an interface
(`Archive`) with a local implementation (`LocalArchive`, here), an S3 one (`s3.S3Archive`) and an Iceberg
table's (`iceberg_table.TableArchive`, an hour of rows standing for a file). Every file below the
archive's root is either listed in an hour or reported by `unlisted_files`, with its record count. Files
are read by the same `records.iter_records` wherever they are, so record numbers, defects and
accounting do not depend on the store.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from backfill_platform.pipeline.archive.boundary import REFUSED, entry_refusal, folder_refusal, lstat_size
from backfill_platform.pipeline.archive.opening import S3ReadConfig
from backfill_platform.pipeline.archive.records import JSON_LINES, RecordFormat, iter_records
from backfill_platform.specs.durations import HOUR


@dataclass(frozen=True)
class ArchiveFile:
    path: str  # what Spark reads (a local path, or an object-store URI)
    name: str  # path relative to the archive root
    ingestion_hour: datetime
    size: int
    modified_ns: int
    # Object stores: the object's ETag, which identifies its content; the manifest fingerprint uses it
    # instead of the modification time.
    etag: str | None = None
    # How a Spark task opens `path` when it is not a local file (endpoint, region; never credentials).
    reader: S3ReadConfig | None = None
    # An hour of a table archive (`archive.iceberg_table`): what identifies its content (its last append,
    # whatever compactions rewrote since), its rows by the table's metrics, and the snapshot read.
    content_version: str | None = None
    rows: int | None = None
    snapshot_id: int | None = None


@dataclass(frozen=True)
class UnlistedFile:
    """A file below the archive root that no ingestion hour lists, so no window ever reads it; or an
    entry refused at the boundary (`boundary.is_refusal(why)`), never opened, so its `lines` are 0."""

    name: str
    size: int
    lines: int
    why: str


@dataclass(frozen=True)
class Removal:
    """A snapshot that removed rows from listed hours (an overwrite, a delete, an unbalanced rewrite)."""

    snapshot_id: int
    operation: str
    committed_at: datetime
    hours: list[datetime]  # empty for rows deleted through delete files
    rows_removed: int
    rows_added: int

    def describe(self, table: str) -> str:
        where = (
            f"of ingestion hours {min(self.hours):%Y-%m-%d %H}:00 to {max(self.hours):%Y-%m-%d %H}:59"
            if self.hours
            else "through delete files (their ingestion hours are not in the table's metadata)"
        )
        return (
            f"{table} snapshot {self.snapshot_id} ({self.operation}, {self.committed_at:%Y-%m-%d %H:%M} UTC) "
            f"removed {self.rows_removed:,} rows (added {self.rows_added:,}) {where}"
        )


class Archive(Protocol):
    """What every archive (`LocalArchive`, `s3.S3Archive`, `iceberg_table.TableArchive`) answers."""

    def list_hour(self, hour: datetime) -> list[ArchiveFile]:
        """The files (or a table's rows) ingested in `hour`, in a stable order."""
        ...

    def list_range(self, start: datetime, end: datetime) -> list[ArchiveFile]:
        """The files of the ingestion hours [start, end), in hour order."""
        ...

    def unlisted_files(self, first_hour: datetime, fmt: RecordFormat = JSON_LINES) -> list[UnlistedFile]:
        """What the archive holds that no hour from `first_hour` on lists, with its record counts."""
        ...

    @property
    def removals(self) -> list[Removal]:
        """What removed rows from the hours the last listing returned (reported, never followed)."""
        ...


class HourlyListing:
    """`list_range` of an archive listed hour by hour (folders of files)."""

    def list_range(self, start: datetime, end: datetime) -> list[ArchiveFile]:
        return [f for hour in hours(start, end) for f in self.list_hour(hour)]  # type: ignore[attr-defined]

    @property
    def removals(self) -> list[Removal]:
        """None: a folder's listing names the files there are, and a file removed is no longer listed
        (its hour's manifest fingerprint changes, so the days reading it are stale)."""
        return []


def hidden(name: str) -> bool:
    """Hadoop's convention: `_SUCCESS`, `.part.crc`, in-progress uploads are not data files."""
    return name.startswith((".", "_"))


def is_folder(entry: os.DirEntry) -> bool:
    """`entry.is_dir()`, False where it cannot be told (a looping link raises ELOOP): such an entry is then
    judged, and refused, as a file (`boundary.entry_refusal`), never a crash of the listing."""
    try:
        return entry.is_dir()
    except OSError:
        return False


@dataclass(frozen=True)
class LocalArchive(HourlyListing):
    """An archive in a local folder, in hourly ingestion folders named by `layout` (strftime).

    Every non-hidden file of an hour folder is listed whatever its extension: compression is recognised
    from the content when the file is read, so a `.jsonl` beside `.jsonl.gz` files is read, not skipped.
    """

    root: Path
    layout: str
    compression: str = "gzip"

    def list_hour(self, hour: datetime) -> list[ArchiveFile]:
        relative = hour.strftime(self.layout)
        folder = self.root / relative
        # An hour folder reached through a link leading out of the root is not read (`boundary`);
        # `unlisted_files` reports it.
        if not folder.is_dir() or folder_refusal(folder, self.root):
            return []
        # Paths are the resolved root's plus the layout's (no `..`); resolving each of a year's tens of
        # thousands of small files again would cost a dozen system calls per file for the same result.
        files = []
        with os.scandir(folder) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                if hidden(entry.name) or is_folder(entry) or entry_refusal(entry, self.root):
                    continue
                stat = entry.stat()
                files.append(
                    ArchiveFile(
                        path=entry.path,
                        name=str(Path(relative) / entry.name),
                        ingestion_hour=hour,
                        size=stat.st_size,
                        modified_ns=stat.st_mtime_ns,
                    )
                )
        return files

    def hour_of(self, folder: str) -> datetime | None:
        """The ingestion hour a folder (relative to the root) stands for, if it is exactly one."""
        return hour_of(folder, self.layout)

    def unlisted_files(
        self, first_hour: datetime, fmt: RecordFormat = JSON_LINES, count: bool = True
    ) -> list[UnlistedFile]:
        """Files below the root that `list_hour` never returns for an hour from `first_hour` on, and
        entries refused at the boundary (`boundary`: links leading out, special or unreadable files),
        which are reported but never opened. `count=False` skips counting the unlisted files' records.

        Root-level hidden files (`_truth.json`) are the archive's own metadata and are not reported.
        """
        found: list[UnlistedFile] = []
        if not self.root.is_dir():
            return found
        pending = [""]  # folders relative to the root; links to folders are judged, never descended
        while pending:
            relative = pending.pop()
            try:
                with os.scandir(self.root / relative) as scan:
                    entries = sorted(scan, key=lambda e: e.name)
            except OSError as exc:  # a folder that cannot be listed is named, not a crash
                found.append(UnlistedFile(relative, 0, 0, f"{REFUSED}cannot be listed ({exc.strerror})"))
                continue
            # Most folders are hours from `first_hour` on, whose visible regular files are all listed.
            hour = hour_of(relative, self.layout) if relative else None
            listed_folder = hour is not None and hour >= first_hour
            for entry in entries:
                name = str(Path(relative) / entry.name) if relative else entry.name
                if not relative and hidden(entry.name):
                    continue
                if entry.is_dir(follow_symlinks=False):
                    pending.append(name)
                    continue
                is_dir = entry.is_symlink() and is_folder(entry)
                refusal = entry_refusal(entry, self.root, want_dir=is_dir)
                if refusal:
                    found.append(UnlistedFile(name, lstat_size(Path(entry.path)), 0, refusal))
                    continue
                if is_dir:  # a link to a folder inside the root: its files are reported where they are
                    continue
                if listed_folder and not hidden(entry.name):
                    continue
                why = unlisted_reason(relative, entry.name, self.layout, first_hour)
                if why is not None:
                    lines = sum(1 for _ in iter_records(entry.path, fmt)) if count else 0
                    found.append(UnlistedFile(name, entry.stat().st_size, lines, why))
        return sorted(found, key=lambda f: f.name)


def hour_of(folder: str, layout: str) -> datetime | None:
    """The ingestion hour a folder (relative to the archive root) stands for, if it is exactly one."""
    try:
        hour = datetime.strptime(folder, layout)
    except ValueError:
        return None
    return hour.replace(tzinfo=UTC) if hour.strftime(layout) == folder else None


def unlisted_reason(folder: str, name: str, layout: str, first_hour: datetime) -> str | None:
    """Why no `list_hour` from `first_hour` on returns the file `name` of `folder` (relative to the
    root, "" for the root itself), or None if one does."""
    hour = hour_of(folder, layout) if folder else None
    if hour is None:
        return f"outside the hour layout {layout!r}"
    if hidden(name):
        return "hidden name (starts with '.' or '_')"
    if hour < first_hour:
        return f"ingestion hour {hour:%Y-%m-%d %H}:00 is before the stream's first read window"
    return None


def hours(start: datetime, end: datetime) -> list[datetime]:
    """Hour starts h with start <= h < end (start is floored to the hour)."""
    current = start.replace(minute=0, second=0, microsecond=0)
    result = []
    while current < end:
        result.append(current)
        current += HOUR
    return result


def list_files(archive: Archive, start: datetime, end: datetime) -> list[ArchiveFile]:
    """The files (or, for a table, the hours) of the ingestion hours [start, end), in hour order."""
    return archive.list_range(start, end)


def manifest_fingerprint(files: list[ArchiveFile]) -> str:
    """Changes when a file is added, removed or replaced: name, size and modification time of a local
    file; key, size and ETag of an object (its content, whenever it was written); the last append of a
    table's hour (not its size, which a compaction changes)."""
    digest = hashlib.sha256()
    for f in sorted(files, key=lambda f: f.name):
        if f.content_version is not None:
            digest.update(f"{f.name}\0{f.content_version}\n".encode())
            continue
        version = f"etag:{f.etag}" if f.etag is not None else f.modified_ns
        digest.update(f"{f.name}\0{f.size}\0{version}\n".encode())
    return digest.hexdigest()[:16]
