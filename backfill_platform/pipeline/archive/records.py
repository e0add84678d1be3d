"""An archive file as records, whatever its format: JSON lines, concatenated JSON, Parquet or Avro.

Every reader yields the same tuple, `(record number, text, exact bytes if not UTF-8, defect, detail)`,
so the parse, the accounting and the quarantine do not depend on the format. The text of a record is
one JSON object: the line itself (`jsonl`), the object cut out exactly (`json_concatenated`), or the
row written as JSON (`parquet`, `avro`: the schema-on-read bridge of seed 002, typed by the spec like
any JSON record). A record that cannot be used as it stands becomes a record with a defect (its
quarantine reason) rather than an exception or a silent change; a file that cannot be read past some
point yields what it could read, then one `unreadable_file` record naming the damage.
"""

from __future__ import annotations

import base64
import json
import re
import tempfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, time
from decimal import Decimal
from typing import TYPE_CHECKING, Any, BinaryIO, Literal

from backfill_platform.pipeline.archive.opening import (
    UTF8_BOM,
    ArchiveReadError,
    S3ReadConfig,
    decompressed,
    open_archive_file,
)

if TYPE_CHECKING:
    from backfill_platform.specs.archive_location import ArchiveSpec

RecordFormatName = Literal["jsonl", "json_concatenated", "parquet", "avro"]
Record = tuple[int, str, bytes | None, str | None, str | None]
KEPT_PREFIX = 1024  # bytes of an over-long record kept in its quarantine record
_CHUNK = 1 << 20
_SPOOL_BYTES = 64 << 20  # a Parquet object larger than this is spooled to disk, not held in memory


@dataclass(frozen=True)
class RecordFormat:
    """How a stream's files hold records (`archive.format`) and the longest record read whole."""

    name: RecordFormatName = "jsonl"
    max_record_bytes: int = 1 << 20

    @classmethod
    def of(cls, archive: ArchiveSpec) -> RecordFormat:
        return cls(archive.format, archive.max_line_bytes)


JSON_LINES = RecordFormat()


def iter_records(
    source: str | BinaryIO, fmt: RecordFormat = JSON_LINES, reader: S3ReadConfig | None = None
) -> Iterator[Record]:
    """The records of a file (a local path, an `s3://` URI or an opened binary stream), streamed."""
    if isinstance(source, str):
        with open_archive_file(source, reader) as raw:
            yield from iter_records(raw, fmt)
        return
    match fmt.name:
        case "jsonl":
            yield from iter_lines(source, fmt.max_record_bytes)
        case "json_concatenated":
            yield from _guarded(_concatenated(decompressed(source), fmt.max_record_bytes))
        case "parquet":
            yield from _guarded(_parquet_rows(source, fmt.max_record_bytes))
        case "avro":
            yield from _guarded(_avro_rows(source, fmt.max_record_bytes))


def iter_lines(
    source: str | BinaryIO, max_line_bytes: int, reader: S3ReadConfig | None = None
) -> Iterator[Record]:
    """(line number, text, exact bytes if not UTF-8, defect, detail) for each line of a file, streamed.

    `source` is a local path, an `s3://` URI (see `open_archive_file`) or an opened binary stream
    (which need not be seekable). A file that cannot be opened raises (`ArchiveReadError` for S3).
    gzip is recognised by its magic bytes, not the name. A leading UTF-8 BOM and each line's CR before
    LF are removed; a final newline does not start a line. What cannot be used as it stands becomes a
    record with a defect rather than an exception or a silent change:
    `invalid_utf8` (text with `\\xNN` escapes, plus the exact bytes), `line_too_long` (its first KiB,
    and its length; at most `max_line_bytes` are held in memory), `unreadable_file` (a truncated or
    corrupt gzip stream: the intact lines before it are yielded, then one record naming the error).
    """
    if isinstance(source, str):
        with open_archive_file(source, reader) as raw:
            yield from iter_lines(raw, max_line_bytes)
        return
    number = 0
    stream = decompressed(source)
    try:
        while chunk := stream.readline(max_line_bytes + 1):
            number += 1
            if number == 1 and chunk.startswith(UTF8_BOM):
                chunk = chunk[len(UTF8_BOM) :]
            if len(chunk.rstrip(b"\n")) > max_line_bytes:
                head, total = chunk[:KEPT_PREFIX], len(chunk)
                while not chunk.endswith(b"\n") and (chunk := stream.readline(1 << 20)):
                    total += len(chunk)
                yield _too_long(number, head, total, max_line_bytes)
                continue
            line = chunk[:-1] if chunk.endswith(b"\n") else chunk
            yield _decoded(number, line[:-1] if line.endswith(b"\r") else line)
    except (EOFError, OSError, zlib.error) as error:
        yield _unreadable(number, error, "lines")


def _guarded(records: Iterator[Record]) -> Iterator[Record]:
    """The records a reader yields until it fails, then one `unreadable_file` record naming why."""
    number = 0
    try:
        for record in records:
            number = record[0]
            yield record
    except (ArchiveReadError, MemoryError):
        raise  # the store failed, not the file: the run fails naming it
    except Exception as error:  # a damaged file, whatever its reader raises: a record, never lost
        yield _unreadable(number, error, "records")


def _decoded(number: int, data: bytes) -> Record:
    try:
        return number, data.decode("utf-8"), None, None, None
    except UnicodeDecodeError as error:
        text = data.decode("utf-8", "backslashreplace")
        return number, text, data, "invalid_utf8", f"byte {error.start}: {error.reason}"


def _too_long(number: int, head: bytes, total: int, limit: int) -> Record:
    text = head.decode("utf-8", "backslashreplace")
    return number, text, None, "line_too_long", f"{total} bytes, over {limit}"


def _unreadable(number: int, error: BaseException, unit: str) -> Record:
    detail = f"{type(error).__name__}: {error} (after {number} {unit})"
    return number + 1, "", None, "unreadable_file", detail


# The concatenated-JSON splitter looks only at the bytes that change its state: outside strings the
# brackets and quotes, inside a string its closing quote and backslash escapes.
_NON_SPACE = re.compile(rb"[^ \t\r\n]")
_STRUCTURE = re.compile(rb'[{}\[\]"]')
_STRING_END = re.compile(rb'["\\]')
_JUNK_END = re.compile(rb"[{\n]")


def _concatenated(stream: BinaryIO, max_record_bytes: int) -> Iterator[Record]:
    """Objects written back to back (`{...}{...}`, any whitespace or newlines between), one record each.

    The split follows JSON's structure (brackets outside strings; quotes and backslash escapes), so a
    string holding `}{` or `\\"` does not split a record, and the text of each record is exactly the
    bytes of its object. What is not an object (text between objects) is a record of its own, up to the
    next `{` or newline, and is quarantined by the parse as `malformed_json`; an object cut off by the
    end of the file likewise. Records longer than `max_record_bytes` are `line_too_long` (first KiB).
    """
    splitter = _ObjectSplitter(max_record_bytes)
    # `read1` returns what is there: a truncated gzip stream gives its intact bytes before it fails.
    read = getattr(stream, "read1", stream.read)
    first = True
    while True:
        if splitter.needs_bytes():
            chunk = read(_CHUNK)
            if first and chunk.startswith(UTF8_BOM):
                chunk = chunk[len(UTF8_BOM) :]
            first = False
            if not chunk:
                break
            splitter.feed(chunk)
            continue
        record = splitter.step()
        if record is not None:
            yield record
    if splitter.start >= 0:  # cut off by the end of the file
        yield splitter.emit(len(splitter.buf))


class _ObjectSplitter:
    """The state of `_concatenated`'s scan: a buffer, the position in it, where the current record starts,
    and whether the scan is between records, inside an object, inside one of its strings, or in junk."""

    def __init__(self, max_record_bytes: int) -> None:
        self.max_record_bytes = max_record_bytes
        self.buf, self.i, self.start, self.number = b"", 0, -1, 0
        self.state, self.depth = "between", 0
        self.head: bytes | None = None  # the first KiB of an over-long record whose start left the buffer
        self.dropped = 0  # bytes of the current record no longer in the buffer
        self.more = False  # the state needs bytes beyond the buffer, though `i` is inside it

    def needs_bytes(self) -> bool:
        return self.i >= len(self.buf) or self.more

    def feed(self, chunk: bytes) -> None:
        """Append `chunk`, dropping what no record needs any more (the head of an over-long one is kept)."""
        self.more = False
        if self.start < 0:
            self.buf, self.i = self.buf[self.i :], 0
        elif self.i - self.start > self.max_record_bytes:  # over-long: keep its head, let the rest go
            self.head = self.head or self.buf[self.start : self.start + KEPT_PREFIX]
            self.dropped += self.i - self.start
            self.buf, self.i, self.start = self.buf[self.i :], 0, 0
        else:
            self.buf, self.i, self.start = self.buf[self.start :], self.i - self.start, 0
        self.buf += chunk

    def emit(self, end: int) -> Record:
        """The current record, ending at `end` in the buffer."""
        total = self.dropped + end - self.start
        record = (
            _too_long(
                self.number,
                self.head or self.buf[self.start : self.start + KEPT_PREFIX],
                total,
                self.max_record_bytes,
            )
            if total > self.max_record_bytes
            else _decoded(self.number, self.buf[self.start : end])
        )
        self.head, self.dropped = None, 0
        return record

    def step(self) -> Record | None:
        """Scan on from `i` in the current state; the record that ends there, if one does."""
        return getattr(self, f"_{self.state}")()

    def _between(self) -> None:
        found = _NON_SPACE.search(self.buf, self.i)
        if found is None:
            self.i = len(self.buf)
            return
        self.start, self.number = found.start(), self.number + 1
        if self.buf[self.start] == ord("{"):
            self.state, self.depth, self.i = "object", 1, self.start + 1
        else:
            self.state, self.i = "junk", self.start + 1

    def _object(self) -> Record | None:
        found = _STRUCTURE.search(self.buf, self.i)
        if found is None:
            self.i = len(self.buf)
            return None
        self.i, char = found.end(), self.buf[found.start()]
        if char == ord('"'):
            self.state = "string"
        elif char in b"{[":
            self.depth += 1
        else:
            self.depth -= 1
            if self.depth == 0:
                record = self.emit(self.i)
                self.state, self.start = "between", -1
                return record
        return None

    def _string(self) -> None:
        found = _STRING_END.search(self.buf, self.i)
        if found is None:
            self.i = len(self.buf)
        elif self.buf[found.start()] == ord('"'):
            self.state, self.i = "object", found.end()
        elif found.start() + 1 < len(self.buf):
            self.i = found.start() + 2  # an escape: the next byte is never the string's end
        else:
            self.i, self.more = found.start(), True  # the escaped byte is in the next chunk

    def _junk(self) -> Record | None:
        """Up to the next object or line."""
        found = _JUNK_END.search(self.buf, self.i)
        if found is None:
            self.i = len(self.buf)
            return None
        end = found.start()
        while end > self.start and self.buf[end - 1] in b" \t\r":
            end -= 1
        record = self.emit(end)
        self.state, self.start, self.i = "between", -1, found.start()
        return record


def _json_value(value: Any) -> Any:
    """A Parquet/Avro value JSON cannot hold as it is, written as the text the spec's types parse."""
    if isinstance(value, datetime):
        # A timestamp without a time zone is taken as UTC, as the Spark session's time zone is.
        return value.isoformat() if value.tzinfo else value.isoformat() + "Z"
    if isinstance(value, date | time):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _as_json(number: int, row: dict, max_record_bytes: int) -> Record:
    text = json.dumps(row, default=_json_value, ensure_ascii=False, separators=(",", ":"))
    if len(text) > max_record_bytes:  # characters: a lower bound of its bytes, enough for a bound
        return _too_long(number, text.encode()[:KEPT_PREFIX], len(text.encode()), max_record_bytes)
    return number, text, None, None, None


def _parquet_rows(stream: BinaryIO, max_record_bytes: int) -> Iterator[Record]:
    """Each row of a Parquet file, in file order, as one JSON object (row number = record number).

    Parquet needs random access (its footer first): a stream that cannot seek (an S3 object body) is
    spooled first, in memory up to 64 MiB and on local disk beyond."""
    if stream.seekable():
        yield from _parquet_file_rows(stream, max_record_bytes)
        return
    with tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES) as spool:
        while block := stream.read(_CHUNK):
            spool.write(block)
        spool.seek(0)
        yield from _parquet_file_rows(spool, max_record_bytes)


def _parquet_file_rows(source: BinaryIO, max_record_bytes: int) -> Iterator[Record]:
    import pyarrow.parquet as pq

    number = 0
    with pq.ParquetFile(source) as parquet:
        for batch in parquet.iter_batches(batch_size=4096):
            for row in batch.to_pylist():
                number += 1
                yield _as_json(number, row, max_record_bytes)


def _avro_rows(stream: BinaryIO, max_record_bytes: int) -> Iterator[Record]:
    """Each record of an Avro object container file, in order, as one JSON object."""
    import fastavro

    for number, row in enumerate(fastavro.reader(stream), start=1):
        yield _as_json(number, row, max_record_bytes)
