"""The JVM jars: declared once by Maven coordinates, resolved and verified at set-up, exactly them on Spark's
classpath, and the Iceberg they bring reads and writes the same tables as PyIceberg, both ways.

The session's Spark (conftest) is the one the platform starts everywhere (`spark_from_env`), so what its
classpath holds is what every run gets.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyspark
import pytest

from backfill_platform import settings
from backfill_platform.devtools import class_archive as build_class_archive
from backfill_platform.devtools import jvm_functions, jvm_jars
from backfill_platform.lakehouse import class_archive, jars
from backfill_platform.lakehouse.resources import spark_from_env
from backfill_platform.lakehouse.tables import ensure_table, table_id
from backfill_platform_tests.support.session import REPO_ROOT

RUNTIME = re.compile(r"iceberg-spark-runtime-(\d+\.\d+)_(\d+\.\d+)")
T0 = datetime(2026, 3, 1, 10, 0, 0)
# Every Spark line runs this module (`make test-other-spark`).
pytestmark = pytest.mark.both_spark_lines


def declared() -> dict[str, jars.Coordinate]:
    return {coordinate.key: coordinate for coordinate in jars.declared_jars()}


RUNTIMES = {"3.5": "iceberg-spark-runtime-3.5_2.12", "4.1": "iceberg-spark-runtime-4.1_2.13"}
# This environment's runtime (the Spark line of its pyspark).
RUNTIME_KEY = f"org.apache.iceberg:{RUNTIMES[jars.spark_line()]}"


@pytest.mark.parametrize("line", sorted(RUNTIMES))
def test_every_jar_is_declared_once_with_a_pinned_version(line):
    coordinates = jars.declared_jars(line=line)
    assert len({c.key for c in coordinates}) == len(coordinates)
    assert {c.key for c in coordinates} == {
        f"org.apache.iceberg:{RUNTIMES[line]}",
        "org.apache.iceberg:iceberg-aws-bundle",
        "org.xerial:sqlite-jdbc",
        "org.postgresql:postgresql",
    }
    for coordinate in coordinates:
        # A plain release: no range, no SNAPSHOT, no LATEST/RELEASE (Maven would pick one each time).
        assert re.fullmatch(r"\d+(\.\d+)+", coordinate.version), coordinate
    iceberg = {c.version for c in coordinates if c.group == "org.apache.iceberg"}
    assert len(iceberg) == 1, f"the runtime and the AWS bundle must share an Iceberg version: {iceberg}"
    assert {c.key: c.version for c in coordinates}["org.postgresql:postgresql"].startswith("42.7.")


def test_the_lock_covers_every_lines_jars_and_nothing_else():
    every_line = {c.file_name for line in jars.spark_lines() for c in jars.declared_jars(line=line)}
    assert jars.spark_lines() == ("3.5", "4.1")
    assert set(jars.locked_hashes()) == every_line


def test_a_spark_line_without_a_declared_runtime_is_refused_naming_the_lines():
    with pytest.raises(ValueError, match=r"pyspark 4\.2 has no Iceberg runtime declared .*3\.5, 4\.1"):
        jars.declared_jars(line="4.2")


def test_the_iceberg_runtime_matches_pysparks_spark_line_and_scala():
    (runtime,) = [c for c in jars.declared_jars() if RUNTIME.match(c.artifact)]
    spark_line, scala = RUNTIME.match(runtime.artifact).groups()
    assert pyspark.__version__.startswith(f"{spark_line}.")
    scala_library = list((Path(next(iter(pyspark.__path__))) / "jars").glob("scala-library-*.jar"))
    assert [jar.name.startswith(f"scala-library-{scala}.") for jar in scala_library] == [True]


def test_the_environments_jar_folder_holds_exactly_the_declared_jars_with_their_checksums():
    assert jars.folder_problems(jars.jar_dir()) == []


def test_a_stray_missing_or_altered_jar_is_refused(tmp_path: Path):
    folder = tmp_path / "jars"
    shutil.copytree(jars.jar_dir(), folder)
    assert jars.folder_problems(folder) == []
    driver = folder / declared()["org.postgresql:postgresql"].file_name
    driver.write_bytes(driver.read_bytes()[:-1] + b"x")
    (folder / "jackson-core-2.15.2.jar").write_bytes(b"")
    runtime = folder / declared()[RUNTIME_KEY].file_name
    runtime.unlink()
    problems = jars.folder_problems(folder)
    assert problems == [
        f"missing {runtime.name}",
        "not declared: jackson-core-2.15.2.jar",
        f"{driver.name}: SHA-256 differs from jars.sha256",
    ]
    # At run time only the file set is checked (no hashing at every session start), and a run refuses it.
    assert jars.folder_problems(folder, hashes=False) == problems[:2]
    with pytest.raises(FileNotFoundError, match="make jars"):
        jars.default_jars(folder)


@pytest.mark.skipif(shutil.which("mvn") is None, reason="mvn is not installed (make setup installs it)")
def test_make_jars_resolves_again_offline_from_the_local_maven_repository(tmp_path: Path):
    """Once set up, the jars come back without network: Maven's `--offline`, verified like the first time."""
    output = tmp_path / "jars"
    assert jvm_jars.main(["--offline", "--output", str(output)]) == 0
    assert jars.folder_problems(output) == []
    # A folder that verifies is left alone: no Maven start.
    stamp = {path.name: path.stat().st_mtime_ns for path in output.iterdir()}
    assert jvm_jars.main(["--offline", "--output", str(output)]) == 0
    assert {path.name: path.stat().st_mtime_ns for path in output.iterdir()} == stamp


def test_a_cluster_list_gets_the_catalogs_declared_driver_unless_it_names_one():
    sqlite = str(jars.jar_dir() / declared()["org.xerial:sqlite-jdbc"].file_name)
    postgres = str(jars.jar_dir() / declared()["org.postgresql:postgresql"].file_name)
    own = ["/opt/iceberg/iceberg-spark-runtime-3.5_2.12-1.9.2.jar"]
    assert jars.with_jdbc_driver(own, "jdbc:sqlite:/d/catalog.db") == [*own, sqlite]
    assert jars.with_jdbc_driver(own, "jdbc:postgresql://db/lake") == [*own, postgres]
    assert jars.with_jdbc_driver([*own, "/opt/postgresql-42.6.0.jar"], "jdbc:postgresql://db/l") == [
        *own,
        "/opt/postgresql-42.6.0.jar",
    ]
    assert jars.with_jdbc_driver(own, "jdbc:mysql://db/lake") == own


def test_the_cluster_override_replaces_the_declared_iceberg_jars(catalog, monkeypatch):
    monkeypatch.setenv(settings.ICEBERG_JARS_ENV, "/opt/a.jar, /opt/b.jar")
    conf = spark_from_env(catalog).full_spark_config()
    sqlite = jars.jar_dir() / declared()["org.xerial:sqlite-jdbc"].file_name
    # The platform's own functions come with any list.
    assert conf["spark.jars"] == f"/opt/a.jar,/opt/b.jar,{sqlite},{jars.functions_jar()}"


def test_the_platforms_jvm_functions_are_built_for_these_sources_and_this_pyspark(tmp_path, monkeypatch):
    """`make jars` compiled them against this pyspark; other sources make another jar name, which a session
    refuses to start without (naming the fix), and they compile."""
    built = jars.functions_jar()
    with zipfile.ZipFile(built) as jar:
        assert "backfill_platform/functions/StrictObjectFields.class" in jar.namelist()
    edited = tmp_path / "functions"
    shutil.copytree(jars.FUNCTIONS_DIR, edited)
    source = edited / "StrictObjectFields.java"
    source.write_text(source.read_text() + "\n// edited\n")
    monkeypatch.setattr(jars, "FUNCTIONS_DIR", edited)
    assert jars.functions_jar() != built and jars.functions_jar().parent == built.parent
    with pytest.raises(FileNotFoundError, match="make jars"):
        jars.required_functions_jar()
    jvm_functions.build(tmp_path / "edited.jar")
    with zipfile.ZipFile(tmp_path / "edited.jar") as jar:
        assert "backfill_platform/functions/StrictObjectFields.class" in jar.namelist()


def jvm_class_source(spark, name: str) -> list[str]:
    """The file name of every classpath entry that holds class `name`, as Spark's classloader sees them."""
    jvm = spark.sparkContext._jvm
    loader = jvm.Thread.currentThread().getContextClassLoader()
    resources = loader.getResources(name.replace(".", "/") + ".class")
    found = []
    while resources.hasMoreElements():
        url = resources.nextElement().toString()  # jar:file:/…/x.jar!/org/…/Y.class
        found.append(url.split("!/", 1)[0].rsplit("/", 1)[-1])
    return found


def test_sparks_classpath_holds_exactly_the_declared_jars(spark):
    # The jars Spark added (driver classpath, shipped to executors): spark://…/jars/<file name>; the
    # declared ones and the platform's own functions.
    added = {Path(url).name for url in spark.sparkContext._jsc.sc().listJars().mkString("\n").split("\n")}
    declared_files = {coordinate.file_name for coordinate in jars.declared_jars()}
    assert added == declared_files | {jars.functions_jar().name}
    # Each piece comes from its declared jar, and from nowhere else (no second Iceberg, no Debian driver).
    expected = {
        "org.apache.iceberg.spark.SparkCatalog": RUNTIME_KEY,
        # The runtime is complete: Iceberg's relocated Jackson is inside it (the old wheel's jar lacked it).
        "org.apache.iceberg.shaded.com.fasterxml.jackson.core.JsonFactoryBuilder": RUNTIME_KEY,
        "software.amazon.awssdk.services.s3.S3Client": "org.apache.iceberg:iceberg-aws-bundle",
        "org.sqlite.JDBC": "org.xerial:sqlite-jdbc",
        "org.postgresql.Driver": "org.postgresql:postgresql",
    }
    for class_name, key in expected.items():
        assert jvm_class_source(spark, class_name) == [declared()[key].file_name], class_name
    assert jvm_class_source(spark, "backfill_platform.functions.StrictObjectFields") == [
        jars.functions_jar().name
    ]


@pytest.fixture
def namespace(spark):
    spark.sql("CREATE NAMESPACE IF NOT EXISTS test_interop")
    yield "test_interop"
    for row in spark.sql("SHOW TABLES IN test_interop").collect():
        spark.sql(f"DROP TABLE IF EXISTS {table_id(spark, 'test_interop', row.tableName)}")


def rows(spark, table: str) -> list[tuple]:
    return sorted(tuple(r) for r in spark.sql(f"SELECT id, ts, label FROM {table}").collect())


def pyiceberg_rows(catalog, identifier: tuple[str, str]) -> list[tuple]:
    """The rows as PyIceberg reads them, timestamps as naive UTC like Spark's (session time zone UTC)."""
    arrow = catalog.load().load_table(identifier).scan().to_arrow()
    values = zip(*(arrow.column(c).to_pylist() for c in ("id", "ts", "label")), strict=True)
    return sorted(
        (i, ts.astimezone(UTC).replace(tzinfo=None) if ts.tzinfo else ts, label) for i, ts, label in values
    )


def test_the_class_archive_is_this_environments_and_the_sessions_jvm_was_given_it(spark):
    """`make jars` built the archive for this JDK, pyspark and jars (its stamp says so), and the session's
    local driver JVM was started with it."""
    archive = class_archive.archive_path()
    assert archive.is_file() and archive.stat().st_size > 50 << 20, archive
    assert build_class_archive.up_to_date(), "the archive's stamp differs from this environment"
    jvm = spark.sparkContext._jvm
    arguments = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert f"-XX:SharedArchiveFile={archive}" in arguments


# A local driver started as every run starts one, logging where each class it loads comes from.
CLASS_LOAD_PROBE = """
import sys
import zipfile
from backfill_platform.lakehouse.resources import catalog_from_env, spark_from_env
resource = spark_from_env(catalog_from_env())
options = f"{resource.java_options()} -Xlog:class+load=info:file={sys.argv[1]}"
spark = resource.model_copy(update={"spark_config": {"spark.driver.extraJavaOptions": options}}).spark_session
spark.sql("CREATE NAMESPACE IF NOT EXISTS probe")
assert spark.range(3).count() == 3
"""


def test_a_new_local_driver_loads_spark_and_iceberg_from_the_class_archive(tmp_path: Path):
    """The JVM really maps the archive (a rejected one would leave only the JDK's own classes shared):
    Spark's and Iceberg's classes, the latter from `spark.jars`, come from its top layer."""
    log, data = tmp_path / "classes.log", tmp_path / "data"
    data.mkdir()
    env = {**os.environ, settings.DATA_DIR_ENV: str(data)}
    done = subprocess.run(
        [sys.executable, "-c", CLASS_LOAD_PROBE, str(log)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "cds" not in done.stdout + done.stderr  # its warnings never reach a run's output
    # Nor Spark's start-up notices (lakehouse/jvm/log4j2-driver.properties): the CLI's output is the run's.
    for notice in ("NativeCodeLoader", "Setting default log level", "To adjust logging level"):
        assert notice not in done.stdout + done.stderr, done.stderr[-2000:]
    loaded = dict(
        re.match(r"(\S+) source: (.*)", line.split("[class,load] ", 1)[1]).groups()
        for line in log.read_text().splitlines()
        if "[class,load] " in line and " source: " in line
    )
    top = "shared objects file (top)"
    spark_classes = [
        name for name in loaded if name.startswith("org.apache.spark.") and "$$Lambda" not in name
    ]
    from_archive = [name for name in spark_classes if loaded[name] == top]
    assert len(spark_classes) > 1000 and len(from_archive) > 0.9 * len(spark_classes)
    assert loaded["org.apache.iceberg.spark.SparkCatalog"] == top


def test_local_drivers_get_the_archive_only_where_it_exists(catalog, tmp_path: Path, monkeypatch):
    monkeypatch.setattr(class_archive, "archive_path", lambda: tmp_path / "absent.jsa")
    options = spark_from_env(catalog).full_spark_config()["spark.driver.extraJavaOptions"]
    assert "SharedArchiveFile" not in options and "-XX:TieredStopAtLevel=1" in options
    monkeypatch.undo()
    on = spark_from_env(catalog).full_spark_config()["spark.driver.extraJavaOptions"]
    assert f"-XX:SharedArchiveFile={class_archive.archive_path()}" in on
    off = spark_from_env(catalog).model_copy(update={"class_archive": False})
    assert "SharedArchiveFile" not in off.full_spark_config()["spark.driver.extraJavaOptions"]
    cluster = spark_from_env(catalog).model_copy(update={"master": "spark://h:7077"})
    assert "spark.driver.extraJavaOptions" not in cluster.full_spark_config()
    # A path with a space stays one option for Spark, which splits the options on unquoted spaces.
    spaced = tmp_path / "a b.jsa"
    spaced.write_bytes(b"")
    assert class_archive.java_option(spaced).startswith(f"'-XX:SharedArchiveFile={spaced}' ")


def test_pyiceberg_reads_sparks_commits_deletes_included(spark, catalog, namespace):
    table = table_id(spark, namespace, "from_spark")
    columns = [("id", "bigint"), ("ts", "timestamp"), ("label", "string")]
    ensure_table(spark, table, columns, "days(ts)", {"write.delete.mode": "merge-on-read"})
    written = [(i, T0 + timedelta(hours=7 * i), f"r{i}") for i in range(12)]
    spark.createDataFrame(written, "id bigint, ts timestamp, label string").writeTo(table).append()
    # A merge-on-read delete (position deletes) and a copy-on-write update on top.
    spark.sql(f"DELETE FROM {table} WHERE id % 5 = 0")
    spark.sql(f"UPDATE {table} SET label = 'changed' WHERE id = 3")
    expected = rows(spark, table)
    assert len(expected) == 9 and (3, T0 + timedelta(hours=21), "changed") in expected
    # Spark's session time zone is UTC and PyIceberg's timestamps are naive UTC: the same values.
    assert pyiceberg_rows(catalog, (namespace, "from_spark")) == expected


def test_spark_reads_and_commits_on_pyicebergs_table(spark, catalog, namespace):
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import DayTransform
    from pyiceberg.types import LongType, NestedField, StringType, TimestampType

    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "ts", TimestampType(), required=False),
        NestedField(3, "label", StringType(), required=False),
    )
    spec = PartitionSpec(PartitionField(2, 1000, DayTransform(), "ts_day"))
    created = catalog.load().create_table(
        (namespace, "from_pyiceberg"), schema, partition_spec=spec, properties={"format-version": "2"}
    )
    written = [(i, T0 + timedelta(hours=5 * i), f"p{i}") for i in range(10)]
    created.append(
        pa.table(
            {
                "id": pa.array([r[0] for r in written], pa.int64()),
                "ts": pa.array([r[1] for r in written], pa.timestamp("us")),
                "label": pa.array([r[2] for r in written], pa.string()),
            }
        )
    )
    table = table_id(spark, namespace, "from_pyiceberg")
    assert rows(spark, table) == written
    # Spark commits on top of PyIceberg's snapshot; PyIceberg then reads Spark's commit.
    spark.sql(f"MERGE INTO {table} t USING (SELECT 4L AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE")
    spark.sql(f"INSERT INTO {table} VALUES (99, TIMESTAMP '2026-03-03 00:00:00', 'spark')")
    expected = [r for r in written if r[0] != 4] + [(99, datetime(2026, 3, 3), "spark")]
    assert rows(spark, table) == sorted(expected)
    assert pyiceberg_rows(catalog, (namespace, "from_pyiceberg")) == sorted(expected)


def test_no_jar_of_the_old_sources_is_left_in_the_set_up():
    """The Snowpark wheel, the jar repair and Debian's JDBC jars are gone from the set-up."""
    repo = REPO_ROOT
    makefile = (repo / "Makefile").read_text()
    pyproject = (repo / "pyproject.toml").read_text()
    for gone in ("snowpark", "jarjar", "jar_repair", "libxerial-sqlite-jdbc-java", "libpostgresql-jdbc-java"):
        assert gone not in makefile and gone not in pyproject, gone
    listed = subprocess.run(
        ["git", "ls-files", "*.jar"], cwd=repo, capture_output=True, text=True, check=False
    ).stdout
    assert listed == ""


def test_spark_and_pyiceberg_share_an_s3_warehouse_through_the_aws_bundle(
    spark, moto, tmp_path: Path, request: pytest.FixtureRequest
):
    """`iceberg-aws-bundle` is what lets Spark write an `s3://` warehouse (Iceberg's S3FileIO, no hadoop-aws):
    a catalog of its own on moto's S3, written by Spark, read back by Spark and by PyIceberg."""
    from pyiceberg.catalog.sql import SqlCatalog

    bucket = "jvm-jars-warehouse"
    moto.client("s3").create_bucket(Bucket=bucket)
    s3 = {
        "s3.endpoint": moto.endpoint_url,
        "s3.path-style-access": "true",
        "s3.access-key-id": "testing",
        "s3.secret-access-key": "testing",
    }
    prefix = "spark.sql.catalog.s3lake"
    conf = {
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.type": "jdbc",
        f"{prefix}.uri": f"jdbc:sqlite:{tmp_path}/catalog.db",
        f"{prefix}.jdbc.schema-version": "V1",
        f"{prefix}.warehouse": f"s3://{bucket}/warehouse",
        f"{prefix}.io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
        f"{prefix}.client.region": moto.region,
        **{f"{prefix}.{key}": value for key, value in s3.items()},
    }
    for key, value in conf.items():  # a catalog is loaded on first use, so it can be added to a session
        spark.conf.set(key, value)
    request.addfinalizer(lambda: [spark.conf.unset(key) for key in conf])
    spark.sql("CREATE NAMESPACE IF NOT EXISTS s3lake.db")
    spark.sql(
        "CREATE TABLE s3lake.db.t (id bigint, label string) USING iceberg TBLPROPERTIES ('format-version'='2')"
    )
    spark.sql("INSERT INTO s3lake.db.t VALUES (1, 'a'), (2, 'b')")
    assert sorted(tuple(r) for r in spark.sql("SELECT id, label FROM s3lake.db.t").collect()) == [
        (1, "a"),
        (2, "b"),
    ]
    listed = moto.client("s3").list_objects_v2(Bucket=bucket, Prefix="warehouse/db/t/data/")
    assert any(item["Key"].endswith(".parquet") for item in listed.get("Contents", []))

    catalog = SqlCatalog(
        "s3lake",
        uri=f"sqlite:///{tmp_path}/catalog.db",
        warehouse=f"s3://{bucket}/warehouse",
        **{**s3, "s3.region": moto.region},
    )
    arrow = catalog.load_table(("db", "t")).scan().to_arrow()
    assert sorted(zip(arrow.column("id").to_pylist(), arrow.column("label").to_pylist(), strict=True)) == [
        (1, "a"),
        (2, "b"),
    ]
