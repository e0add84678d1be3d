"""The team tier, end to end, as teams deploy a lakehouse: a Spark standalone cluster, an Iceberg REST
catalog with its warehouse on S3, the Dagster instance on PostgreSQL — switched by configuration only
(environment variables and dagster.team.yaml).

Module fixtures start a throwaway PostgreSQL (Debian's server binaries, `initdb` in a temporary directory,
loopback only, password authentication on TCP), a Spark standalone master + one worker from pyspark's own
`spark-class` on loopback (the worker has the S3 credentials, as a node has its role's), and Apache Iceberg's
own REST catalog server whose warehouse is a prefix of a bucket in moto's S3 (`rest_catalog`, conftest). A
3-day validated backfill runs through `dagster asset materialize` in a subprocess whose environment points
the catalog at the REST server, the warehouse at S3, the Dagster instance at PostgreSQL and Spark at the
cluster: the team's own stream `plays` (a component of the team's project, run from its folder), whose
archive is in another bucket of the same S3 (read by the cluster's tasks), and the demo dataset on it as
`plays_per_title` (events → shadow v2 → production); then `backfill-platform revert` undoes the promotion.
Everything is read back independently: production, shadow and the ledger through PyIceberg on the same REST
endpoint, every table's files as objects in the bucket, the run from Dagster's `runs` table with psycopg,
the applications from the Spark master. A JDBC catalog on PostgreSQL stays a supported configuration (one
backfill, last test). Everything the fixtures started is stopped, also when a test fails.
"""

from __future__ import annotations

import glob
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

import pytest

from backfill_platform import settings
from backfill_platform.pipeline.ledger.commits import ACTION, RANGE_END, RANGE_START
from backfill_platform.pipeline.run_tags import RUN_ID
from backfill_platform_tests.support.datasets import production
from backfill_platform_tests.support.processes import free_port, stop, wait_until
from backfill_platform_tests.support.projects import write_project
from backfill_platform_tests.support.session import REPO_ROOT, START
from backfill_platform_tests.support.streams import stream_specs

pytestmark = [
    pytest.mark.other_writers,
    pytest.mark.long_running(minutes=2),
    # Archives in moto's buckets: the operator's setting allows them (BACKFILL_PLATFORM_ARCHIVE_S3_BUCKETS).
    pytest.mark.usefixtures("s3_archive_buckets"),
]

DAYS = 3
EVENTS_PER_DAY = 2000
DAYS_OF_RANGE = [(START + timedelta(days=i)).isoformat() for i in range(DAYS)]
# The team's stream and dataset (the demo's, declared again as its project's components), its archive in S3.
STREAM = "plays"
DATASET = "plays_per_title"
ARCHIVE_BUCKET = "team-archive"
EVENTS = f"raw.{STREAM}_events"
SHADOW = f"shadow.{DATASET}__v2"
PRODUCTION = production(DATASET).identifier
SELECTION = f"raw/{STREAM}_events,shadow/{DATASET}__v2,prod/{DATASET}_production"
CLI_TIMEOUT_SECONDS = 600
CLI = Path(sys.executable).with_name("backfill-platform")
STARTUP_TIMEOUT_SECONDS = 90

# Roles and databases of the throwaway server: one database for the Iceberg catalog, one for Dagster.
PG_USER = "backfill"
CATALOG_DB = "lake"
DAGSTER_DB = "dagster"


def postgres_bin_dir() -> Path | None:
    """The newest Debian PostgreSQL server binaries (`/usr/lib/postgresql/<major>/bin`)."""
    found = sorted(
        (Path(p).parent for p in glob.glob("/usr/lib/postgresql/*/bin/initdb")),
        key=lambda d: int(d.parent.name) if d.parent.name.isdigit() else 0,
    )
    return found[-1] if found else None


# --- PostgreSQL ----------------------------------------------------------------------------------------


@dataclass
class Postgres:
    port: int
    password: str
    socket_dir: Path

    def connect(self, dbname: str, admin: bool = False):
        """psycopg connection: as the superuser over the Unix socket (trust), or as the application
        role over TCP with its password (as every component of the tier connects)."""
        import psycopg

        if admin:
            return psycopg.connect(
                host=str(self.socket_dir), port=self.port, user="postgres", dbname=dbname, autocommit=True
            )
        return psycopg.connect(
            host="127.0.0.1", port=self.port, user=PG_USER, password=self.password, dbname=dbname
        )


def as_postgres() -> dict:
    """PostgreSQL's server refuses to run as root: subprocess arguments that drop to `postgres` if we are."""
    if os.geteuid() != 0:
        return {}
    return {"user": "postgres", "group": "postgres", "extra_groups": []}


def run_as_postgres(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(args, check=True, capture_output=True, text=True, timeout=120, **as_postgres())


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        pytest.skip(
            "PostgreSQL server binaries not found (/usr/lib/postgresql/*/bin/initdb): run `make setup`"
        )
    # Not under pytest's tmp_path: its parents are private to root, and the server runs as `postgres`.
    root = Path(tempfile.mkdtemp(prefix="backfill-pg-"))
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    port = free_port()
    password = secrets.token_hex(12)
    pwfile = root / "superuser.pw"
    pwfile.write_text(secrets.token_hex(12) + "\n")
    if os.geteuid() == 0:
        shutil.chown(pwfile, "postgres", "postgres")
    data = root / "db"
    log = root / "postgres.log"
    started = False
    try:
        run_as_postgres(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                f"--pwfile={pwfile}",
                "-E",
                "UTF8",
                "--no-sync",
            ]
        )
        options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
        run_as_postgres(
            [str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(log), "-w", "start"]
        )
        started = True
        server = Postgres(port=port, password=password, socket_dir=root)
        from psycopg import sql

        with server.connect("postgres", admin=True) as conn:
            role = sql.Identifier(PG_USER)
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(role, sql.Literal(password)))
            for db in (CATALOG_DB, DAGSTER_DB):
                conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(db), role))
        yield server
    except subprocess.CalledProcessError as error:
        tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
        pytest.fail(f"PostgreSQL did not start: {error.stderr}\n{tail}")
    finally:
        if started:
            subprocess.run(
                [str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                capture_output=True,
                timeout=60,
                **as_postgres(),
            )
        shutil.rmtree(root, ignore_errors=True)


# --- Spark standalone ----------------------------------------------------------------------------------


@dataclass
class SparkCluster:
    master_url: str
    web_url: str
    work_dir: Path

    def state(self) -> dict:
        with urllib.request.urlopen(f"{self.web_url}/json/", timeout=10) as response:
            return json.loads(response.read())


def spark_class() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-class"


def spark_env(node_env: dict[str, str]) -> dict[str, str]:
    """The daemons' environment: `node_env` is what every node of a team's cluster has (its S3 credentials)."""
    return {
        **os.environ,
        **node_env,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_DAEMON_MEMORY": "512m",
        "TZ": "UTC",
    }


def wait_for(
    predicate: Callable[[], object], what: str, processes: list[subprocess.Popen], logs: list[Path]
) -> None:
    """Until `predicate` holds (an unreachable daemon counts as not yet); fails at once if a daemon exited."""

    def tails() -> str:
        return "\n".join(log.read_text(errors="replace")[-3000:] for log in logs if log.exists())

    def ready() -> bool:
        for process in processes:
            if process.poll() is not None:
                pytest.fail(f"{what}: a Spark daemon exited with {process.returncode}\n{tails()}")
        try:
            return bool(predicate())
        except (urllib.error.URLError, ConnectionError, TimeoutError, json.JSONDecodeError):
            return False

    wait_until(ready, timeout=STARTUP_TIMEOUT_SECONDS, every=1, what=lambda: f"{what} ready\n{tails()}")


@pytest.fixture(scope="module")
def spark_cluster(moto, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkCluster]:
    root = tmp_path_factory.mktemp("spark_cluster")
    work_dir = root / "work"
    work_dir.mkdir()
    master_port, master_web, worker_port, worker_web = (free_port() for _ in range(4))
    cluster = SparkCluster(
        master_url=f"spark://127.0.0.1:{master_port}",
        web_url=f"http://127.0.0.1:{master_web}",
        work_dir=work_dir,
    )
    launched: list[subprocess.Popen] = []
    logs = [root / "master.log", root / "worker.log"]

    def launch(args: list[str], log: Path) -> subprocess.Popen:
        with log.open("wb") as out:
            process = subprocess.Popen(
                [str(spark_class()), *args],
                env=spark_env(moto.env()),
                cwd=root,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        launched.append(process)
        return process

    try:
        master_args = ["--host", "127.0.0.1", "--port", str(master_port), "--webui-port", str(master_web)]
        launch(["org.apache.spark.deploy.master.Master", *master_args], logs[0])
        wait_for(lambda: cluster.state().get("status") == "ALIVE", "Spark master", launched, logs)
        worker_args = [
            cluster.master_url,
            *("--host", "127.0.0.1", "--port", str(worker_port), "--webui-port", str(worker_web)),
            *("--cores", "2", "--memory", "2g", "--work-dir", str(work_dir)),
        ]
        launch(["org.apache.spark.deploy.worker.Worker", *worker_args], logs[1])
        wait_for(
            lambda: any(w.get("state") == "ALIVE" for w in cluster.state().get("workers", [])),
            "Spark worker",
            launched,
            logs,
        )
        yield cluster
    finally:
        for process in reversed(launched):
            stop(process, timeout=20)


# --- the backfill through Dagster, on the team tier ----------------------------------------------------


@dataclass
class TeamBackfill:
    env: dict[str, str]
    completed: subprocess.CompletedProcess
    seconds: float
    truth: dict
    dagster_home: Path
    project_root: Path  # the team's project: its CLI runs from here


def team_env(
    postgres: Postgres, cluster: SparkCluster, rest_catalog, moto, data_dir: Path, dagster_home: Path
) -> dict[str, str]:
    """Exactly the settings of the team-tier block in docs/deployment.md; nothing else differs from the
    embedded tier."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BACKFILL_PLATFORM_", "DAGSTER_PG_"))}
    env.update(moto.env())  # AWS_ENDPOINT_URL, region and the credentials: the standard AWS variables
    env.update(
        {
            settings.DATA_DIR_ENV: str(data_dir),
            settings.SPARK_MASTER_ENV: cluster.master_url,
            settings.CATALOG_URI_ENV: rest_catalog.uri,
            settings.WAREHOUSE_ENV: rest_catalog.warehouse,
            settings.ARCHIVE_S3_BUCKETS_ENV: ARCHIVE_BUCKET,
            "DAGSTER_HOME": str(dagster_home),
            "DAGSTER_PG_HOST": "127.0.0.1",
            "DAGSTER_PG_PORT": str(postgres.port),
            "DAGSTER_PG_DB": DAGSTER_DB,
            "DAGSTER_PG_USERNAME": PG_USER,
            "DAGSTER_PG_PASSWORD": postgres.password,
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable,
            "DAGSTER_DISABLE_TELEMETRY": "1",
            "TZ": "UTC",
        }
    )
    return env


def run_cli(
    env: dict[str, str], command: list[str], cwd: Path = REPO_ROOT
) -> tuple[subprocess.CompletedProcess, float]:
    """`command` run from `cwd` (a project's folder: the CLI and `dagster` read that project)."""
    began = time.monotonic()
    completed = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=CLI_TIMEOUT_SECONDS
    )
    seconds = time.monotonic() - began
    sys.stderr.write(f"\nteam tier: {' '.join(command[1:5])} took {seconds:.1f}s\n")
    if completed.returncode != 0:
        sys.stderr.write(completed.stdout[-4000:] + completed.stderr[-8000:])
    assert completed.returncode == 0, f"{command} failed:\n{completed.stderr[-3000:]}"
    return completed, seconds


@pytest.fixture(scope="module")
def team_backfill(
    postgres: Postgres,
    spark_cluster: SparkCluster,
    rest_catalog,
    moto,
    tmp_path_factory: pytest.TempPathFactory,
) -> TeamBackfill:
    from backfill_platform.devtools.generator.playback import GeneratorConfig, generate_playback_archive

    data_dir = tmp_path_factory.mktemp("team_data")
    config = GeneratorConfig(start=START, days=DAYS, events_per_day=EVENTS_PER_DAY, seed=23)
    generated = tmp_path_factory.mktemp("team_archive")
    truth = generate_playback_archive(generated, config)
    assert moto.upload(generated, ARCHIVE_BUCKET, STREAM) == truth["totals"]["files"] + 1  # + _truth.json
    specs = stream_specs(STREAM, DATASET, f"s3://{ARCHIVE_BUCKET}/{STREAM}")
    project = write_project(tmp_path_factory.mktemp("team_project"), specs)
    dagster_home = tmp_path_factory.mktemp("team_dagster_home")
    shutil.copy(REPO_ROOT / "dagster.team.yaml", dagster_home / "dagster.yaml")
    env = team_env(postgres, spark_cluster, rest_catalog, moto, data_dir, dagster_home)
    command = [
        sys.executable,
        "-m",
        "dagster",
        "asset",
        "materialize",
        "-m",
        project.definitions_module,
        "--select",
        SELECTION,
        "--partition-range",
        f"{DAYS_OF_RANGE[0]}...{DAYS_OF_RANGE[-1]}",
    ]
    completed, seconds = run_cli(env, command, project.root)
    return TeamBackfill(
        env=env,
        completed=completed,
        seconds=seconds,
        truth=truth,
        dagster_home=dagster_home,
        project_root=project.root,
    )


@pytest.fixture
def catalog(team_backfill: TeamBackfill, monkeypatch: pytest.MonkeyPatch):
    """PyIceberg on the REST catalog, configured from the run's own variables, in its environment for the
    test (the S3 credentials come from the AWS default chain when a file is read)."""
    from backfill_platform.lakehouse.resources import catalog_from_env

    for name, value in team_backfill.env.items():
        monkeypatch.setenv(name, value)
    return catalog_from_env(for_dagster=False).load()


def rows_per_day(table) -> dict[str, int]:
    days = table.scan(selected_fields=("event_date",)).to_arrow().column("event_date").to_pylist()
    return dict(sorted(Counter(d.isoformat() for d in days).items()))


def recorded_runs(postgres: Postgres) -> list[tuple[str, str]]:
    with postgres.connect(DAGSTER_DB) as conn:
        return conn.execute("SELECT run_id, status FROM runs ORDER BY create_timestamp").fetchall()


# --- the tests -----------------------------------------------------------------------------------------


def test_the_run_is_recorded_in_postgresql(team_backfill: TeamBackfill, postgres: Postgres):
    runs = recorded_runs(postgres)
    assert len(runs) == 1, runs
    assert runs[0][1] == "SUCCESS", runs
    with postgres.connect(DAGSTER_DB) as conn:
        materialized = conn.execute(
            "SELECT asset_key, count(DISTINCT partition) FROM event_logs "
            "WHERE dagster_event_type = 'ASSET_MATERIALIZATION' GROUP BY asset_key"
        ).fetchall()
    # asset_key is the key's path as a JSON list
    assert {json.loads(key)[0] for key, _ in materialized} == {"raw", "shadow", "prod"}
    assert {count for _, count in materialized} == {DAYS}
    # Nothing fell back to the embedded tier's SQLite storage.
    assert not list(team_backfill.dagster_home.rglob("*.db"))


def test_production_read_back_through_the_rest_catalog_then_reverted(
    team_backfill: TeamBackfill, postgres: Postgres, catalog
):
    shadow = rows_per_day(catalog.load_table(SHADOW))
    production_table = catalog.load_table(PRODUCTION)
    production = rows_per_day(production_table)
    assert list(production) == DAYS_OF_RANGE
    assert all(rows > 0 for rows in production.values()), production
    assert production == shadow

    run_id = recorded_runs(postgres)[0][0]
    promotions = [s for s in production_table.metadata.snapshots if s.summary.get(ACTION) == "promote"]
    assert len(promotions) == 1, [s.summary.additional_properties for s in promotions]
    promotion = promotions[0]
    assert production_table.metadata.current_snapshot_id == promotion.snapshot_id
    assert promotion.summary.get(RUN_ID) == run_id
    end_exclusive = (date.fromisoformat(DAYS_OF_RANGE[-1]) + timedelta(days=1)).isoformat()
    assert (promotion.summary.get(RANGE_START), promotion.summary.get(RANGE_END)) == (
        DAYS_OF_RANGE[0],
        end_exclusive,
    )

    ledger = catalog.load_table("platform.ledger").scan().to_arrow().to_pylist()
    rows = {
        row["partition_date"].isoformat(): row
        for row in ledger
        if row["dataset"] == DATASET and row["version"] == "v2" and row["run_id"] == run_id
    }
    assert sorted(rows) == DAYS_OF_RANGE
    for day, row in rows.items():
        expected = team_backfill.truth["partitions"][day]
        assert row["checks_passed"] is True, (day, row["failed_checks"])
        assert row["records"] == expected["records"], day
        assert row["events_written"] == expected["written"], day
        assert row["shadow_rows"] == production[day], day
        assert row["promoted_snapshot_id"] == promotion.snapshot_id, day

    # Reverting is one more commit through the same catalog, from the CLI on the same variables.
    run_cli(
        team_backfill.env,
        [str(CLI), "revert", "--dataset", DATASET, "--reason", "team tier"],
        team_backfill.project_root,
    )
    reverted = catalog.load_table(PRODUCTION)
    assert reverted.current_snapshot().summary.get(ACTION) == "revert"
    assert reverted.current_snapshot().parent_snapshot_id == promotion.snapshot_id
    assert rows_per_day(reverted) == {}  # the first promotion replaced nothing


def test_every_table_is_in_the_bucket_and_none_on_disk(
    team_backfill: TeamBackfill, catalog, moto, rest_catalog
):
    s3 = moto.client("s3")
    bucket, _, prefix = rest_catalog.warehouse.removeprefix("s3://").partition("/")
    keys = {
        item["Key"]
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=f"{prefix}/")
        for item in page.get("Contents", [])
    }
    for identifier in (EVENTS, SHADOW, PRODUCTION, "platform.ledger"):
        table = catalog.load_table(identifier)
        assert table.metadata_location.startswith(f"{rest_catalog.warehouse}/"), identifier
        data_files = [
            task.file.file_path for task in table.scan(snapshot_id=first_snapshot(table)).plan_files()
        ]
        assert data_files, identifier
        assert {path.removeprefix(f"s3://{bucket}/") for path in data_files} <= keys, identifier
        # The metadata file is an object too, and Iceberg table metadata (JSON) when read from the bucket.
        body = s3.get_object(Bucket=bucket, Key=table.metadata_location.removeprefix(f"s3://{bucket}/"))
        assert b'"format-version"' in body["Body"].read(), identifier
    # Nothing fell back to the embedded tier: no local warehouse, no SQLite catalog.
    data_dir = Path(team_backfill.env[settings.DATA_DIR_ENV])
    assert not (data_dir / "warehouse").exists()
    assert not list(data_dir.rglob("catalog.db"))
    # Nor to a local archive: the data directory holds no archive, the events came from the bucket.
    assert not (data_dir / "archive").exists()


def test_duckdb_reads_the_tables_through_the_same_rest_catalog(
    team_backfill: TeamBackfill, catalog, rest_catalog, moto
):
    """DuckDB's iceberg extension, attached to the REST endpoint with an S3 secret for the bucket, sees the
    rows PyIceberg sees (shadow and events: tables a revert does not touch)."""
    from backfill_platform_tests.support.duckdb_iceberg import attach_rest_catalog

    aws = moto.env()
    duck = attach_rest_catalog(
        rest_catalog.uri,
        moto.endpoint_url,
        moto.region,
        aws["AWS_ACCESS_KEY_ID"],
        aws["AWS_SECRET_ACCESS_KEY"],
    )
    shadow = duck.sql(
        f"SELECT CAST(event_date AS VARCHAR), count(*) FROM lake.{SHADOW} GROUP BY 1 ORDER BY 1"
    ).fetchall()
    assert dict(shadow) == rows_per_day(catalog.load_table(SHADOW))
    (events,) = duck.sql(f"SELECT count(*) FROM lake.{EVENTS}").fetchone()
    assert events == sum(team_backfill.truth["partitions"][day]["written"] for day in DAYS_OF_RANGE)


def first_snapshot(table) -> int:
    """The table's first snapshot with data (the revert test may have emptied production since)."""
    return next(s.snapshot_id for s in table.metadata.snapshots if s.summary.get("added-records", "0") != "0")


def test_the_work_ran_on_the_cluster(team_backfill: TeamBackfill, spark_cluster: SparkCluster):
    # The master moves an application to `completedapps` some time after its driver has gone (seconds on a
    # busy machine): poll for it rather than read once.
    state: dict = {}

    def completed() -> list[dict] | None:
        nonlocal state
        state = spark_cluster.state()
        apps = [app for app in state.get("completedapps", []) if app.get("name") == "backfill_platform"]
        active = [app for app in state.get("activeapps", []) if app.get("name") == "backfill_platform"]
        return apps if apps and not active else None

    apps = wait_until(
        completed,
        timeout=STARTUP_TIMEOUT_SECONDS,
        what=lambda: f"the applications completed, none active: {json.dumps(state)[:2000]}",
    )
    assert all(app.get("state") == "FINISHED" for app in apps), apps
    # Executors ran in the worker: each application has its folder (executor logs) in the work dir.
    app_dirs = {path.name for path in spark_cluster.work_dir.glob("app-*")}
    assert {app["id"] for app in apps} <= app_dirs


def test_a_jdbc_catalog_on_postgresql_is_still_a_configuration(
    postgres: Postgres, tmp_path_factory: pytest.TempPathFactory
):
    """The former team catalog: Iceberg's JDBC catalog in a PostgreSQL database, for Spark (JDBC) and
    PyIceberg (SQLAlchemy); a one-day validated backfill with local Spark and a local warehouse."""
    from backfill_platform.devtools.generator.playback import GeneratorConfig, generate_playback_archive
    from backfill_platform.lakehouse.resources import IcebergCatalogResource

    data_dir = tmp_path_factory.mktemp("jdbc_data")
    config = GeneratorConfig(start=START, days=1, events_per_day=EVENTS_PER_DAY, seed=29)
    truth = generate_playback_archive(data_dir / "archive" / "playback", config)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BACKFILL_PLATFORM_", "DAGSTER_"))}
    env.update(
        {
            settings.DATA_DIR_ENV: str(data_dir),
            settings.CATALOG_JDBC_URI_ENV: f"jdbc:postgresql://127.0.0.1:{postgres.port}/{CATALOG_DB}",
            settings.CATALOG_SQL_URI_ENV: f"postgresql+psycopg://127.0.0.1:{postgres.port}/{CATALOG_DB}",
            "BACKFILL_PLATFORM_CATALOG_USER": PG_USER,
            "BACKFILL_PLATFORM_CATALOG_PASSWORD": postgres.password,
            "SPARK_LOCAL_IP": "127.0.0.1",
            "DAGSTER_DISABLE_TELEMETRY": "1",
            "TZ": "UTC",
        }
    )
    day, end = START.isoformat(), (START + timedelta(days=1)).isoformat()
    run_cli(env, [str(CLI), "backfill", "--dataset", "views_per_title", "--start", day, "--end", end])

    catalog = IcebergCatalogResource(
        jdbc_uri=env[settings.CATALOG_JDBC_URI_ENV],
        sql_uri=env[settings.CATALOG_SQL_URI_ENV],
        warehouse=f"file://{data_dir}/warehouse",
        jdbc_user=PG_USER,
        jdbc_password=postgres.password,
    ).load()
    production = rows_per_day(catalog.load_table("prod.views_per_title"))
    assert production == rows_per_day(catalog.load_table("shadow.views_per_title__v2"))
    assert list(production) == [day]
    ledger = catalog.load_table("platform.ledger").scan().to_arrow().to_pylist()
    (row,) = [r for r in ledger if r["dataset"] == "views_per_title"]
    assert row["checks_passed"] is True
    assert row["events_written"] == truth["partitions"][day]["written"]
    # Its tables are rows of PostgreSQL's `iceberg_tables`, not of any SQLite file.
    with postgres.connect(CATALOG_DB) as conn:
        names = {name for (name,) in conn.execute("SELECT table_name FROM iceberg_tables").fetchall()}
    assert {"playback_events", "views_per_title", "ledger"} <= names
