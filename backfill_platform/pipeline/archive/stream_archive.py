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
from backfill_platform.specs.archive_location import check_archive_root, check_s3_location
from backfill_platform.specs.isolation import check_archive_table
from backfill_platform.specs.stream import StreamSpec

if TYPE_CHECKING:
    from dagster_aws.s3 import S3Resource


def archive_for(spec: StreamSpec, s3: S3Resource | None = None) -> LocalArchive | S3Archive | TableArchive:
    """The stream's archive. A local location must resolve inside the configured roots (see the spec);
    an `s3://bucket/prefix` one is listed through `s3` (a dagster-aws `S3Resource`), by default one
    configured from boto3's standard environment (`s3.s3_resource_from_env`); an Iceberg table
    (`archive.iceberg_table`) through the platform's catalog (`iceberg_table.table_archive`)."""
    # Where an archive may be is checked when the spec loads and again here, under the operator's settings
    # of this process: never a table the platform writes, a bucket it does not allow, or a folder outside
    # its roots.
    if spec.archive.iceberg_table is not None:
        if spec.archive.catalog is None:
            check_archive_table(spec.archive.iceberg_table)
        return table_archive(spec.archive)
    if spec.archive.s3 is not None:
        check_s3_location(str(spec.archive.location))
        return s3_archive(spec.archive, s3)
    root = check_archive_root(spec.archive, settings.data_dir())
    return LocalArchive(root=root, layout=spec.archive.layout, compression=spec.archive.compression)
