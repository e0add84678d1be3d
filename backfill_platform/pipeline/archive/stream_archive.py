"""The archive a stream's spec names: a local folder, an S3 prefix or an Iceberg table.

The one place that knows every kind of archive, above them all: the S3 and table listings share only
`listing` (its `Archive` interface and the local folder's listing) and know nothing of each other, and
everything above asks for `archive_for(spec)` and speaks to the `listing.Archive` it gets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from backfill_platform import settings
from backfill_platform.pipeline.archive.iceberg_table import TableArchive, table_archive
from backfill_platform.pipeline.archive.listing import LocalArchive
from backfill_platform.pipeline.archive.s3 import S3Archive, s3_archive
from backfill_platform.specs.archive_location import check_archive_root
from backfill_platform.specs.stream import StreamSpec

if TYPE_CHECKING:
    from dagster_aws.s3 import S3Resource


def archive_for(spec: StreamSpec, s3: S3Resource | None = None) -> LocalArchive | S3Archive | TableArchive:
    """The stream's archive. A local location must resolve inside the configured roots (see the spec);
    an `s3://bucket/prefix` one is listed through `s3` (a dagster-aws `S3Resource`), by default one
    configured from boto3's standard environment (`s3.s3_resource_from_env`); an Iceberg table
    (`archive.iceberg_table`) through the platform's catalog (`iceberg_table.table_archive`)."""
    if spec.archive.iceberg_table is not None:
        return table_archive(spec.archive)
    if spec.archive.s3 is not None:
        return s3_archive(spec.archive, s3)
    root = check_archive_root(spec.archive, settings.data_dir())
    return LocalArchive(root=root, layout=spec.archive.layout, compression=spec.archive.compression)
