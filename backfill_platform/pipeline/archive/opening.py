"""An archive file's bytes: opened from a local path or an S3 object, and decompressed by content.

The ground floor of the archive package: the record readers (`records`, `line_blocks`), the listings
(`listing`, `s3`, `iceberg_table`) and the Spark tasks all open files through here, so that a local
file and an object read alike, and a store that fails is one error (`ArchiveReadError`) wherever it is
met. A Spark task gets the endpoint, region and profile the driver listed with (`S3ReadConfig`), never
credentials: those come from the task's own standard AWS chain.
"""

from __future__ import annotations

import gzip
import io
import os
from dataclasses import dataclass
from typing import Any, BinaryIO

GZIP_MAGIC = b"\x1f\x8b"
UTF8_BOM = b"\xef\xbb\xbf"


class ArchiveReadError(RuntimeError):
    """An archive file or listing that cannot be read at all (missing bucket or object, access denied,
    a connection lost mid-object): the run fails naming the file, rather than reading a silent gap.
    A file that is read but damaged (a truncated gzip stream) is not this: it is quarantined."""


def open_archive_file(path: str, reader: S3ReadConfig | None = None) -> BinaryIO:
    """A binary stream of an archive file: a local path, or an `s3://bucket/key` URI (fetched with
    boto3, configured by `reader` and the process's standard AWS environment)."""
    if path.startswith("s3://"):
        return open_object(path, reader)
    return open(path, "rb")


@dataclass(frozen=True)
class S3ReadConfig:
    """How a Spark task reaches the objects the driver listed: no secrets, picklable."""

    endpoint_url: str | None = None
    region_name: str | None = None
    profile_name: str | None = None
    use_ssl: bool = True
    verify: bool | None = None
    max_attempts: int = 5

    def client(self) -> Any:
        """A boto3 S3 client, one per process and configuration (Spark reuses its Python workers)."""
        key = (os.getpid(), self)
        if key not in _CLIENTS:
            import boto3
            from botocore.config import Config

            session = boto3.session.Session(profile_name=self.profile_name)
            _CLIENTS[key] = session.client(
                "s3",
                endpoint_url=self.endpoint_url,
                region_name=self.region_name,
                use_ssl=self.use_ssl,
                verify=self.verify,
                config=Config(retries={"max_attempts": self.max_attempts, "mode": "standard"}),
            )
        return _CLIENTS[key]


_CLIENTS: dict[tuple[int, S3ReadConfig], Any] = {}


def split_uri(uri: str) -> tuple[str, str]:
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    return bucket, key


def describe(error: Exception) -> str:
    """`Code: message` of a botocore error, else the exception's type and text."""
    response = getattr(error, "response", None)
    if isinstance(response, dict) and "Error" in response:
        code = response["Error"].get("Code") or response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return f"{code}: {response['Error'].get('Message') or error}"
    return f"{type(error).__name__}: {error}"


class _Body(io.RawIOBase):
    """A `GetObject` body as a raw stream; any failure while reading names the object."""

    def __init__(self, uri: str, body: Any) -> None:
        self._uri, self._body = uri, body

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        try:
            data = self._body.read(len(buffer))
        except Exception as error:  # connection lost, incomplete body: not a file defect
            raise ArchiveReadError(f"reading {self._uri} failed: {describe(error)}") from error
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            self._body.close()
        super().close()


def open_object(uri: str, reader: S3ReadConfig | None = None, client: Any = None) -> io.BufferedReader:
    """A streamed binary reader of `s3://bucket/key` (not held in memory). A missing bucket or object,
    or access denied, raises `ArchiveReadError` naming the URI."""
    bucket, key = split_uri(uri)
    client = client or (reader or S3ReadConfig()).client()
    try:
        body = client.get_object(Bucket=bucket, Key=key)["Body"]
    except Exception as error:
        raise ArchiveReadError(f"cannot read {uri}: {describe(error)}") from error
    return io.BufferedReader(_Body(uri, body), 1 << 20)


def decompressed(raw: BinaryIO) -> BinaryIO:
    """The content of an archive file's stream: gunzipped when it starts with gzip's magic bytes,
    whatever its name. The stream need not be seekable (an S3 object body)."""
    magic = raw.read(2)
    if raw.seekable():
        raw.seek(0)
    else:
        raw = io.BufferedReader(_Prepended(magic, raw), 1 << 16)
    return gzip.GzipFile(fileobj=raw, mode="rb") if magic == GZIP_MAGIC else raw


class _Prepended(io.RawIOBase):
    """Bytes already read from the head of a non-seekable stream, then the rest of it."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self._head, self._rest = head, rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self._head:
            size = min(len(buffer), len(self._head))
            buffer[:size], self._head = self._head[:size], self._head[size:]
            return size
        data = self._rest.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)
