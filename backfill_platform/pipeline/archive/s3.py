"""An archive in S3 (`archive.location: s3://bucket/prefix`), listed and read with boto3.

The driver lists through dagster-aws (`dagster_aws.s3.S3Resource`): one paginated `ListObjectsV2` per
ingestion hour, on that hour's prefix (`prefix/` + the hour's layout + `/`), never the whole bucket.
Spark here has no S3 filesystem, so the Spark tasks fetch the objects themselves (`opening.open_object`, boto3)
and hand the bytes to the same `iter_records` as local files: record numbers, defects, gzip sniffing and the
accounting are identical. A task gets the endpoint, region and profile the driver listed with
(`opening.S3ReadConfig`), never credentials: those come from the task's own standard AWS chain (environment
variables — which local-mode workers inherit from the driver, or `spark.executorEnv.*` —, profile,
instance role).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from backfill_platform import settings
from backfill_platform.pipeline.archive.listing import (
    ArchiveFile,
    HourlyListing,
    UnlistedFile,
    hidden,
    unlisted_reason,
)
from backfill_platform.pipeline.archive.opening import ArchiveReadError, S3ReadConfig, describe, open_object
from backfill_platform.pipeline.archive.records import JSON_LINES, RecordFormat, iter_records

if TYPE_CHECKING:
    from dagster_aws.s3 import S3Resource

    from backfill_platform.specs.archive_location import ArchiveSpec

# `unlisted_files` lists the whole prefix; beyond this many keys it stops and says so.
MAX_SCAN_KEYS = 100_000


def s3_resource_from_env() -> S3Resource:
    """A dagster-aws `S3Resource` configured from boto3's standard environment: `AWS_REGION` /
    `AWS_DEFAULT_REGION`, `AWS_PROFILE`, `AWS_ENDPOINT_URL_S3` / `AWS_ENDPOINT_URL` (an S3-compatible
    endpoint). Credentials are not read here: boto3 takes them from its chain (environment, profile,
    instance role). A deployment that wants them in Dagster config passes `S3Resource(aws_access_key_id=
    EnvVar(...), ...)` to `archive_for` instead."""
    from dagster_aws.s3 import S3Resource

    return S3Resource(
        region_name=settings.aws_region() or None,
        endpoint_url=settings.s3_endpoint() or None,
        profile_name=settings.first_env("AWS_PROFILE") or None,
    )


@dataclass(frozen=True)
class S3Archive(HourlyListing):
    """An archive under `s3://bucket/prefix`, in hourly ingestion "folders" named by `layout`.

    Like `LocalArchive`, every non-hidden object directly in an hour's folder is listed whatever its
    extension (compression is recognised from the content); objects in deeper "folders" are not.
    """

    bucket: str
    prefix: str  # without a trailing '/'; "" for the whole bucket
    layout: str
    client: Any = field(repr=False, compare=False)  # the driver's boto3 client (`S3Resource.get_client()`)
    reader: S3ReadConfig = field(default_factory=S3ReadConfig)
    compression: str = "gzip"
    max_scan_keys: int = MAX_SCAN_KEYS
    page_size: int = 1000  # keys per `ListObjectsV2` call (S3's maximum)

    @property
    def location(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}".rstrip("/")

    def _key(self, relative: str) -> str:
        return f"{self.prefix}/{relative}" if self.prefix else relative

    def _relative(self, key: str) -> str:
        return key[len(self.prefix) + 1 :] if self.prefix else key

    def _objects(self, prefix: str, **options: Any) -> Iterator[dict]:
        """The objects under `prefix`, page by page (`ListObjectsV2`, 1,000 keys a page)."""
        try:
            for page in self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=prefix, PaginationConfig={"PageSize": self.page_size}, **options
            ):
                yield from page.get("Contents", [])
        except ArchiveReadError:
            raise
        except Exception as error:
            raise ArchiveReadError(f"cannot list s3://{self.bucket}/{prefix}: {describe(error)}") from error

    def _file(self, obj: dict, hour: datetime) -> ArchiveFile:
        return ArchiveFile(
            path=f"s3://{self.bucket}/{obj['Key']}",
            name=self._relative(obj["Key"]),
            ingestion_hour=hour,
            size=obj["Size"],
            modified_ns=int(obj["LastModified"].timestamp()) * 1_000_000_000,
            etag=obj["ETag"].strip('"'),
            reader=self.reader,
        )

    def list_hour(self, hour: datetime) -> list[ArchiveFile]:
        folder = self._key(hour.strftime(self.layout)) + "/"
        files = [
            self._file(obj, hour)
            for obj in self._objects(folder, Delimiter="/")
            if obj["Key"] != folder and not hidden(obj["Key"][len(folder) :])
        ]
        return sorted(files, key=lambda f: f.name)

    def unlisted_files(self, first_hour: datetime, fmt: RecordFormat = JSON_LINES) -> list[UnlistedFile]:
        """Objects under the prefix that `list_hour` never returns for an hour from `first_hour` on,
        each read to count its records.

        This lists the whole prefix (paginated), so it is bounded: after `max_scan_keys` keys it stops
        and reports one entry saying the rest was not scanned. Root-level hidden objects (`_truth.json`)
        are the archive's own metadata and are not reported; "folder" marker keys (ending in `/`) are
        not files.
        """
        found = []
        base = f"{self.prefix}/" if self.prefix else ""
        for scanned, obj in enumerate(self._objects(base)):
            if scanned >= self.max_scan_keys:
                found.append(
                    UnlistedFile(
                        f"{self._relative(obj['Key'])} and after",
                        0,
                        0,
                        f"not scanned: the scan of {self.location} stops after {self.max_scan_keys} keys",
                    )
                )
                break
            relative = self._relative(obj["Key"])
            folder, _, name = relative.rpartition("/")
            if not name or (not folder and hidden(name)):
                continue
            why = unlisted_reason(folder, name, self.layout, first_hour)
            if why is None:
                continue
            uri = f"s3://{self.bucket}/{obj['Key']}"
            with open_object(uri, client=self.client) as stream:
                lines = sum(1 for _ in iter_records(stream, fmt))
            found.append(UnlistedFile(relative, obj["Size"], lines, why))
        return found


def s3_archive(archive: ArchiveSpec, s3: S3Resource | None = None) -> S3Archive:
    """The `S3Archive` of a spec's `s3://` location, listed through `s3` (default: from the environment)."""
    bucket, prefix = archive.s3 or ("", "")
    if not bucket:
        raise ValueError(f"{archive.location!r} is not an s3:// location")
    resource = s3 or s3_resource_from_env()
    client = resource.get_client()
    reader = S3ReadConfig(
        endpoint_url=client.meta.endpoint_url,
        region_name=client.meta.region_name,
        profile_name=resource.profile_name,
        use_ssl=resource.use_ssl,
        verify=resource.verify,
        max_attempts=resource.max_attempts,
    )
    return S3Archive(
        bucket=bucket,
        prefix=prefix,
        layout=archive.layout,
        client=client,
        reader=reader,
        compression=archive.compression,
    )
