"""The lakehouse's settings, no Spark started (lakehouse/resources.py): the driver JVM's compiler and
generated-method limit chosen from the size of the first read, a new data directory's embedded catalog, and
where an embedded catalog's SQLite database is."""

from __future__ import annotations

from backfill_platform import settings
from backfill_platform.lakehouse.resources import (
    DRIVER_LOG_OPTION,
    GENERATED_METHOD_LIMIT,
    LOCAL_CLIENT_JIT_OPTIONS,
    LOCAL_TIERED_JIT_OPTIONS,
    MIB,
    IcebergCatalogResource,
    SparkIcebergResource,
)

# --- the Spark settings of a run ------------------------------------------------------------------------


def test_the_first_read_chooses_the_local_jvm_compiler() -> None:
    catalog = IcebergCatalogResource(
        jdbc_uri="jdbc:sqlite:c.db", sql_uri="sqlite:///c.db", warehouse="file:///w"
    )
    # Without the class archive's option, which `test_jvm_jars` covers.
    auto = SparkIcebergResource(catalog=catalog, tiered_jit_from_mib=8, class_archive=False)
    options = "spark.driver.extraJavaOptions"
    assert "-XX:TieredStopAtLevel=1" in auto.full_spark_config()[options]  # nothing known: quick start
    assert "-XX:TieredStopAtLevel=1" in auto.full_spark_config(8 * MIB - 1)[options]
    assert auto.full_spark_config(8 * MIB)[options] == f"{LOCAL_TIERED_JIT_OPTIONS} {DRIVER_LOG_OPTION}"
    forced = SparkIcebergResource(catalog=catalog, local_jit="client", class_archive=False)
    assert (
        forced.full_spark_config(10 * 1024 * MIB)[options]
        == f"{LOCAL_CLIENT_JIT_OPTIONS} {DRIVER_LOG_OPTION}"
    )
    # A cluster's JVMs keep their defaults; spark_config still wins over the choice.
    assert options not in SparkIcebergResource(catalog=catalog, master="spark://h:7077").full_spark_config(
        MIB**2
    )
    mine = SparkIcebergResource(catalog=catalog, spark_config={options: "-Xss4m"})
    assert mine.full_spark_config(MIB**2)[options] == "-Xss4m"


def test_big_reads_generate_no_method_the_jvm_would_not_compile() -> None:
    catalog = IcebergCatalogResource(
        jdbc_uri="jdbc:sqlite:c.db", sql_uri="sqlite:///c.db", warehouse="file:///w"
    )
    limit = "spark.sql.codegen.hugeMethodLimit"
    auto = SparkIcebergResource(catalog=catalog, tiered_jit_from_mib=8, class_archive=False)
    assert limit not in auto.full_spark_config(8 * MIB - 1)  # a small run: Spark's own limit
    assert auto.full_spark_config(8 * MIB)[limit] == str(GENERATED_METHOD_LIMIT) == "8000"
    cluster = SparkIcebergResource(catalog=catalog, master="spark://h:7077")
    assert cluster.full_spark_config()[limit] == "8000"
    mine = SparkIcebergResource(catalog=catalog, master="spark://h:7077", spark_config={limit: "65535"})
    assert mine.full_spark_config()[limit] == "65535"


def test_the_session_zone_is_utc_whatever_a_run_asks() -> None:
    """Days are UTC days and ISO times are read in the session's zone (`parse._iso_timestamp`)."""
    catalog = IcebergCatalogResource(
        jdbc_uri="jdbc:sqlite:c.db", sql_uri="sqlite:///c.db", warehouse="file:///w"
    )
    zone = "spark.sql.session.timeZone"
    asked = SparkIcebergResource(catalog=catalog, spark_config={zone: "America/New_York"})
    assert asked.full_spark_config()[zone] == "UTC"


# --- the embedded catalog -----------------------------------------------------------------------------------


def test_a_new_data_directory_gets_its_catalog(tmp_path, monkeypatch):
    """A data directory that does not exist yet is made on first use (SQLite makes its file, not its
    folder), by PyIceberg's catalog and by Spark's settings alike: a namespace created is listed back."""
    from backfill_platform.lakehouse.resources import catalog_from_env

    for variable in (settings.CATALOG_URI_ENV, settings.CATALOG_JDBC_URI_ENV, settings.CATALOG_SQL_URI_ENV):
        monkeypatch.delenv(variable, raising=False)
    data = tmp_path / "not" / "yet"
    monkeypatch.setenv(settings.DATA_DIR_ENV, str(data))
    loaded = catalog_from_env(for_dagster=False).load()
    loaded.create_namespace("fresh")
    assert ("fresh",) in loaded.list_namespaces()
    assert (data / "catalog.db").is_file()

    spark_side = tmp_path / "for spark"
    monkeypatch.setenv(settings.DATA_DIR_ENV, str(spark_side))
    catalog = catalog_from_env(for_dagster=False)
    uri = catalog.spark_conf()[f"spark.sql.catalog.{catalog.name}.uri"]
    assert uri == f"jdbc:sqlite:{spark_side.resolve()}/catalog.db"
    assert spark_side.is_dir()


def test_the_sqlite_database_of_a_catalog_uri():
    """One reading of where an embedded catalog's database is, for the folder it needs and its lock."""
    from pathlib import Path

    from backfill_platform.lakehouse.resources import sqlite_database, sqlite_sql_database
    from backfill_platform.orchestration.runs.catalog_lock import lock_path_for

    assert sqlite_database("jdbc:sqlite:file:/x/c.db?journal_mode=WAL") == Path("/x/c.db")
    assert sqlite_database("jdbc:postgresql://db/lake") is None
    assert lock_path_for("jdbc:sqlite:/x/c.db") == Path("/x/c.db.writer.lock")
    assert sqlite_sql_database("sqlite+pysqlite:////a/my%20dir/c.db") == Path("/a/my dir/c.db")
    assert sqlite_sql_database("sqlite://") is None
    assert sqlite_sql_database("postgresql://db/lake") is None
    assert sqlite_sql_database("not a url") is None
