"""The minimal jobs the platform is compared with: what anyone would write without the platform.

Both read the same archive files as the platform's events step would for the range (its ingestion-hour
window), with an explicit schema, upcast the two schema versions the obvious way, keep the range's
events, drop duplicate event ids and replace the range's partitions of an Iceberg table partitioned by
`days(event_time)`. No quarantine, no checks, no ledger, no shadow, no promotion.

* bare Spark: the platform's own Spark and catalog settings (`SparkIcebergResource.full_spark_config`),
  `DataFrameWriterV2.overwritePartitions`;
* DuckDB (the `bench` extra): `read_json` + `QUALIFY`, written with PyIceberg (`overwrite` of the range)
  into the same kind of table in the same catalog.
"""

from __future__ import annotations

import os
from datetime import datetime

SPARK_TABLE = "bench.baseline_events"
DUCKDB_TABLE = "bench.duckdb_events"
COLUMNS = (
    ("event_id", "string"),
    ("event_time", "timestamp"),
    ("user_id", "string"),
    ("title_id", "string"),
    ("event_type", "string"),
    ("position_sec", "bigint"),
    ("device_type", "string"),
    ("country", "string"),
    ("schema_version", "int"),
)
# The raw fields of both versions (v1: ISO `event_time`, `device`; v2: epoch ms, `device_type`, `country`).
RAW_FIELDS = (
    ("event_id", "string"),
    ("event_time", "string"),
    ("user_id", "string"),
    ("title_id", "string"),
    ("event_type", "string"),
    ("position_sec", "bigint"),
    ("device", "string"),
    ("device_type", "string"),
    ("country", "string"),
    ("schema_version", "int"),
)


def spark_baseline(spark, files: list[str], start: datetime, end: datetime, catalog: str) -> None:
    from pyspark.sql import functions as F

    from backfill_platform.lakehouse.tables import ensure_table

    table = f"{catalog}.{SPARK_TABLE}"
    ensure_table(spark, table, COLUMNS, "days(event_time)")
    raw = spark.read.schema(", ".join(f"{n} {t}" for n, t in RAW_FIELDS)).json(files)
    time_text = F.col("event_time")
    event_time = F.when(time_text.rlike("^[0-9]+$"), F.timestamp_millis(time_text.cast("long"))).otherwise(
        F.to_timestamp(time_text)
    )
    events = (
        raw.select(
            "event_id",
            event_time.alias("event_time"),
            "user_id",
            "title_id",
            "event_type",
            "position_sec",
            F.coalesce("device_type", "device").alias("device_type"),
            F.coalesce("country", F.lit("unknown")).alias("country"),
            F.coalesce("schema_version", F.lit(1)).alias("schema_version"),
        )
        .where(F.col("event_id").isNotNull() & (F.col("event_time") >= start) & (F.col("event_time") < end))
        .dropDuplicates(["event_id"])
    )
    spark.sparkContext.setJobDescription(f"bare Spark: read, deduplicate, write {table}")
    events.writeTo(table).overwritePartitions()


DUCKDB_QUERY = """
WITH raw AS (
    SELECT * FROM read_json($files, format = 'newline_delimited', compression = 'gzip', columns = {columns})
), typed AS (
    SELECT
        event_id,
        CASE WHEN regexp_full_match(event_time, '[0-9]+') THEN epoch_ms(event_time::BIGINT)::TIMESTAMPTZ
             ELSE try_cast(event_time AS TIMESTAMPTZ) END AS event_time,
        user_id, title_id, event_type, position_sec,
        coalesce(device_type, device) AS device_type,
        coalesce(country, 'unknown') AS country,
        coalesce(schema_version, 1) AS schema_version
    FROM raw
)
SELECT * FROM typed
WHERE event_id IS NOT NULL AND event_time >= $start AND event_time < $end
QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY event_time) = 1
"""


def duckdb_baseline(files: list[str], start: datetime, end: datetime, iceberg_catalog) -> None:
    import duckdb
    from pyiceberg.expressions import And, GreaterThanOrEqual, LessThan
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import DayTransform
    from pyiceberg.types import IntegerType, LongType, NestedField, StringType, TimestamptzType

    duck_types = {"string": "VARCHAR", "bigint": "BIGINT", "int": "INTEGER"}
    columns = "{" + ", ".join(f"'{n}': '{duck_types[t]}'" for n, t in RAW_FIELDS) + "}"
    connection = duckdb.connect()
    connection.execute(f"SET threads = {os.cpu_count() or 1}")
    connection.execute("SET TimeZone = 'UTC'")
    events = connection.execute(
        DUCKDB_QUERY.format(columns=columns), {"files": files, "start": start, "end": end}
    ).to_arrow_table()

    types = {
        "string": StringType(),
        "timestamp": TimestamptzType(),
        "bigint": LongType(),
        "int": IntegerType(),
    }
    schema = Schema(
        *(NestedField(i, name, types[kind], required=False) for i, (name, kind) in enumerate(COLUMNS, 1))
    )
    spec = PartitionSpec(PartitionField(2, 1000, DayTransform(), "event_time_day"))
    iceberg_catalog.create_namespace_if_not_exists(DUCKDB_TABLE.split(".")[0])
    table = iceberg_catalog.create_table_if_not_exists(
        DUCKDB_TABLE,
        schema,
        partition_spec=spec,
        properties={"format-version": "2", "write.parquet.compression-codec": "zstd"},
    )
    in_range = And(
        GreaterThanOrEqual("event_time", start.isoformat()), LessThan("event_time", end.isoformat())
    )
    table.overwrite(events.cast(table.schema().as_arrow()), overwrite_filter=in_range)
