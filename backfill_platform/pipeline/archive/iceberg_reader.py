"""Reading a table archive's read window into Spark, as the same records the file readers give.

A run reads one pinned snapshot (the one its listing saw, `iceberg_table.TableArchive`), filtered to the
ingestion hours it listed; Iceberg prunes the data files by the ingestion column's bounds. Each row
becomes one record of `readers.LINES_SCHEMA`, so the parse, typing, dedupe, accounting and quarantine are
those of every other archive. A record's identity is its table, snapshot, data file and row position
(`_source_file` = `namespace.table@snapshot:file`, `_line_number` = position + 1); with the Kafka
Connect sink's metadata, its Kafka partition and offset too.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType

from backfill_platform.pipeline.archive.listing import ArchiveFile
from backfill_platform.pipeline.archive.readers import LINES_SCHEMA, schema_names
from backfill_platform.specs.archive_location import ArchiveSpec
from backfill_platform.specs.durations import HOUR


def read_table_lines(spark: SparkSession, archive: ArchiveSpec, files: list[ArchiveFile]) -> DataFrame:
    """One record per row of the listed hours, read from the snapshot the listing pinned."""
    if not files:
        return spark.createDataFrame([], LINES_SCHEMA)
    snapshots = {f.snapshot_id for f in files}
    if len(snapshots) != 1:  # one listing pins one snapshot; two would mix states of the table
        raise ValueError(f"a table archive's listing pins one snapshot, got {sorted(snapshots)}")
    snapshot = snapshots.pop()
    catalog = archive_catalog(spark, archive.catalog)
    rows = (
        spark.read.format("iceberg")
        .option("snapshot-id", str(snapshot))
        .load(f"{catalog}.{archive.iceberg_table}")
    )
    ingested = _ingestion_time(rows, archive.ingestion_time)
    low = min(f.ingestion_hour for f in files)
    high = max(f.ingestion_hour for f in files) + HOUR
    rows = rows.where((ingested >= F.lit(low)) & (ingested < F.lit(high)))
    kafka = archive.kafka_metadata
    if kafka is not None and kafka.topic is not None:
        rows = rows.where(F.col(kafka.column("topic")) == kafka.topic)
    line = _payload(rows, archive)
    source = F.concat(
        F.lit(f"{archive.iceberg_table}@{snapshot}:"), F.regexp_extract(F.col("_file"), r"[^/]+$", 0)
    )
    records = rows.select(
        source.alias("_source_file"),
        (F.col("_pos") + 1).alias("_line_number"),
        ingested.alias("_ingestion_time"),
        line.alias("line"),
        F.lit(None).cast("binary").alias("_raw"),
        F.when(line.isNull(), F.lit("malformed_json")).alias("_defect"),
        F.when(line.isNull(), F.lit(f"the payload column {archive.payload_column!r} is null")).alias(
            "_defect_detail"
        ),
        (F.col(kafka.column("partition")).cast("int") if kafka else F.lit(None).cast("int")).alias(
            "_kafka_partition"
        ),
        (F.col(kafka.column("offset")).cast("bigint") if kafka else F.lit(None).cast("bigint")).alias(
            "_kafka_offset"
        ),
    )
    return records.select(*schema_names(LINES_SCHEMA))


def archive_catalog(spark: SparkSession, name: str | None) -> str:
    """The Spark catalog holding the archive table: the platform's, or the named archive catalog, added to
    the session on first use (Spark loads a catalog when it is first named, so it may be added late)."""
    if name is None:
        return spark.conf.get("spark.sql.defaultCatalog")
    from backfill_platform.lakehouse.resources import archive_catalog_from_env

    for key, value in archive_catalog_from_env(name).spark_conf().items():
        if spark.conf.get(key, None) != value:
            spark.conf.set(key, value)
    return name


def _ingestion_time(rows: DataFrame, column: str) -> Column:
    """The ingestion column as a timestamp: epoch milliseconds (long) are converted."""
    if isinstance(rows.schema[column].dataType, LongType):
        return F.timestamp_millis(F.col(column))
    return F.col(column).cast("timestamp")


def _payload(rows: DataFrame, archive: ArchiveSpec) -> Column:
    """The record as JSON text: the payload column, or the row's other columns as one object."""
    if archive.payload_column is not None:
        value = F.col(archive.payload_column)
        is_text = isinstance(rows.schema[archive.payload_column].dataType, StringType)
        return value if is_text else F.to_json(value)
    prefix = archive.kafka_metadata.prefix + "_" if archive.kafka_metadata else None
    columns = [
        name
        for name in rows.columns
        if name != archive.ingestion_time and not (prefix and name.startswith(prefix))
    ]
    return F.to_json(F.struct(*(F.col(f"`{name}`") for name in columns)))
