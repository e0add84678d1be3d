"""Dagster resources for the lakehouse: one Iceberg catalog, seen by Spark and by PyIceberg.

`IcebergCatalogResource` describes the catalog once; `SparkIcebergResource` (dagster-pyspark's
lazy PySpark resource, extended) starts a Spark session wired to that catalog the first time a step
asks for it — never at import or definitions load. `lakehouse_resources_from_env` builds both for the
current deployment tier from environment variables, with the embedded tier (SQLite under `data/`) as
the default.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Any, Literal

from dagster import ConfigurableResource, EnvVar
from dagster_pyspark import LazyPySparkResource
from pydantic import Field, PrivateAttr

from backfill_platform import settings
from backfill_platform.lakehouse import class_archive
from backfill_platform.lakehouse.jars import default_jars, required_functions_jar, with_jdbc_driver
from backfill_platform.lakehouse.preflight import check_lakehouse
from backfill_platform.masking import control_characters_refused, has_userinfo, mask


class IcebergCatalogResource(ConfigurableResource):
    """The Iceberg catalog shared by Spark and PyIceberg: a REST catalog (`rest_uri`), or JDBC on a database
    (SQLite by default, PostgreSQL on a team's server); the warehouse on local disk or on S3."""

    name: str = Field(
        default=settings.DEFAULT_CATALOG_NAME,
        description="Catalog name. Spark and PyIceberg must use the same one: the JDBC catalog stores it.",
    )
    rest_uri: str = Field(
        default="",
        description=(
            "Endpoint of an Iceberg REST catalog (http(s)://…: Polaris, Unity, Glue's or S3 Tables' REST, "
            "Nessie, Lakekeeper, Iceberg's own server). When set, the catalog is that one and the JDBC "
            "settings must be empty."
        ),
    )
    rest_token: str | None = Field(
        default=None, description="Bearer token of the REST catalog; set it with EnvVar, never inline."
    )
    rest_credential: str | None = Field(
        default=None,
        description="OAuth2 client credentials of the REST catalog (`client_id:secret`); set it with EnvVar.",
    )
    jdbc_uri: str = Field(
        default="", description="JDBC URI of the catalog database, as Spark's Iceberg catalog uses it."
    )
    sql_uri: str = Field(
        default="", description="SQLAlchemy URI of the same database, as PyIceberg's SQL catalog uses it."
    )
    warehouse: str = Field(
        default="",
        description=(
            "Warehouse location: file://… locally, s3://bucket/prefix on object storage. With a REST "
            "catalog it may be empty (the server's default) or name the server's warehouse."
        ),
    )
    jdbc_user: str | None = Field(default=None, description="Catalog database user (PostgreSQL tiers).")
    jdbc_password: str | None = Field(
        default=None, description="Catalog database password; set it with EnvVar, never inline."
    )
    s3_endpoint: str = Field(
        default="",
        description="S3 endpoint of an s3:// warehouse (MinIO, moto, …); empty = AWS's own for the region.",
    )
    s3_region: str = Field(default="", description="Region of the warehouse's bucket (empty: the SDK's).")
    s3_path_style: bool = Field(
        default=False,
        description="Path-style S3 addressing (http://endpoint/bucket/key), which most S3-compatible stores need.",
    )

    @property
    def is_rest(self) -> bool:
        return bool(self.rest_uri)

    def check(self) -> None:
        """Raises ValueError naming the settings when they do not describe exactly one catalog, when one
        holds a control character (never showing its value) or a REST URI holds credentials. Messages
        show URIs masked (`masking.mask`)."""
        for field, variable in SETTING_VARIABLES.items():
            if refused := control_characters_refused(f"{variable} ({field})", getattr(self, field)):
                raise ValueError(refused)
        if self.is_rest and has_userinfo(self.rest_uri):
            raise ValueError(
                f"{settings.CATALOG_URI_ENV} holds credentials before its host ({mask(self.rest_uri)}): "
                f"give a bearer token in {settings.CATALOG_TOKEN_ENV} or OAuth2 client credentials in "
                f"{settings.CATALOG_CREDENTIAL_ENV} instead (a URL is shown in messages and logs)"
            )
        if self.is_rest and self.jdbc_uri:
            raise ValueError(
                f"the catalog is either REST ({settings.CATALOG_URI_ENV}={mask(self.rest_uri)}) or JDBC "
                f"({settings.CATALOG_JDBC_URI_ENV}={mask(self.jdbc_uri)}), not both: unset one"
            )
        if not self.is_rest and not self.jdbc_uri:
            raise ValueError(
                f"no catalog: set {settings.CATALOG_URI_ENV} (a REST catalog) or "
                f"{settings.CATALOG_JDBC_URI_ENV} (a JDBC one)"
            )
        if self.is_rest and not self.rest_uri.startswith(("http://", "https://")):
            raise ValueError(
                f"{settings.CATALOG_URI_ENV} must be an http(s):// URL, not {mask(self.rest_uri)!r}"
            )

    def make_sqlite_folder(self) -> None:
        """Create the folder of an embedded SQLite catalog (a new data directory, say): SQLite creates the
        file on first use but not its folder, and fails with "unable to open database file", no path."""
        for database in (sqlite_database(self.jdbc_uri), sqlite_sql_database(self.sql_uri)):
            if database is not None and database.name != ":memory:":
                database.parent.mkdir(parents=True, exist_ok=True)

    def spark_conf(self) -> dict[str, str]:
        self.check()
        self.make_sqlite_folder()
        prefix = f"spark.sql.catalog.{self.name}"
        conf = {
            prefix: "org.apache.iceberg.spark.SparkCatalog",
            # Several processes (runs, the CLI, the UI) commit to the same tables: always read the
            # current metadata, so a gate never decides on a stale snapshot.
            f"{prefix}.cache-enabled": "false",
        }
        if self.warehouse:
            conf[f"{prefix}.warehouse"] = self.warehouse
        if self.is_rest:
            conf[f"{prefix}.type"] = "rest"
            conf[f"{prefix}.uri"] = self.rest_uri
            if self.rest_token:
                conf[f"{prefix}.token"] = self.rest_token
            if self.rest_credential:
                conf[f"{prefix}.credential"] = self.rest_credential
        else:
            conf[f"{prefix}.type"] = "jdbc"
            conf[f"{prefix}.uri"] = self.jdbc_uri
            conf[f"{prefix}.jdbc.schema-version"] = "V1"
        if self.jdbc_uri.startswith("jdbc:sqlite:"):
            # Without WAL a MERGE after any df.cache() fails with SQLITE_BUSY (see the stack notes).
            conf[f"{prefix}.jdbc.journal_mode"] = "WAL"
            conf[f"{prefix}.jdbc.busy_timeout"] = "30000"
        if self.jdbc_user:
            conf[f"{prefix}.jdbc.user"] = self.jdbc_user
        if self.jdbc_password:
            conf[f"{prefix}.jdbc.password"] = self.jdbc_password
        conf.update({f"{prefix}.{key}": value for key, value in self.s3_properties_java().items()})
        return conf

    def s3_properties_java(self) -> dict[str, str]:
        """Iceberg-Java's S3FileIO settings (iceberg-aws-bundle). Credentials come from the AWS SDK's
        default chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, a profile, a role), never from here."""
        props: dict[str, str] = {}
        if self.warehouse.startswith("s3://"):
            props["io-impl"] = "org.apache.iceberg.aws.s3.S3FileIO"
        if self.s3_endpoint:
            props["s3.endpoint"] = self.s3_endpoint
        if self.s3_region:
            props["client.region"] = self.s3_region
        if self.s3_path_style:
            props["s3.path-style-access"] = "true"
        return props

    def s3_properties_python(self) -> dict[str, str]:
        """PyIceberg's S3 settings (its pyarrow FileIO); credentials from the same default chain."""
        props: dict[str, str] = {}
        if self.s3_endpoint:
            props["s3.endpoint"] = self.s3_endpoint
        if self.s3_region:
            props["s3.region"] = self.s3_region
        if self.s3_path_style:
            props["s3.force-virtual-addressing"] = "false"
        return props

    def load(self) -> Any:
        """A PyIceberg catalog on the same catalog and warehouse as Spark's."""
        self.check()
        props = self.s3_properties_python()
        if self.warehouse:
            props["warehouse"] = self.warehouse
        if self.is_rest:
            from pyiceberg.catalog.rest import RestCatalog

            if self.rest_token:
                props["token"] = self.rest_token
            if self.rest_credential:
                props["credential"] = self.rest_credential
            try:
                return RestCatalog(self.name, uri=self.rest_uri, **props)
            except Exception as error:  # its text may echo a header or the URL: masked before it is raised
                from backfill_platform.lakehouse.preflight import LakehouseConfigError

                raise LakehouseConfigError(
                    f"the Iceberg REST catalog at {self.rest_uri} ({settings.CATALOG_URI_ENV}) cannot be "
                    f"used: {type(error).__name__}: {error}",
                    secrets=(self.rest_token, self.rest_credential),
                ) from None
        from pyiceberg.catalog.sql import SqlCatalog

        self.make_sqlite_folder()
        return SqlCatalog(self.name, uri=self.sql_uri_with_credentials(), **props)

    def sql_uri_with_credentials(self) -> str:
        """`sql_uri` with the catalog user and password (from their env vars) when it names none, so
        the password lives in one variable for Spark and PyIceberg, e.g. `postgresql+psycopg://host/db`."""
        if not self.jdbc_user:
            return self.sql_uri
        from sqlalchemy.engine import make_url

        url = make_url(self.sql_uri)
        if url.username:
            return self.sql_uri
        return url.set(username=self.jdbc_user, password=self.jdbc_password).render_as_string(
            hide_password=False
        )


# The driver JVM of a local session (which is also its executor) and its JIT compiler. Most platform runs
# are short and plan many small queries, so the JVM spends much of them warming up: the client compiler
# alone (C1) starts fastest. On a big read it halves the throughput of Spark's generated code, so a run
# that first reads `tiered_jit_from_mib` or more keeps the optimizing compiler (C2), reserved for code
# that is really hot (thresholds 10x the JVM's defaults). Measured on 2 cores (the events pass of one
# fresh session): a day of 20k events 10.0 s with C1, 12.3 s tiered (13.7 s with default thresholds);
# 2 days x 300k (17 MiB) 31.5 s / 25.3 s; 2 days x 1.5M (85 MiB) 121.7 s / 60.6 s (64.4 s).
# C1 alone shrinks the JVM's default code cache from 240 to 48 MiB, which a long session fills with the
# compiled code of Spark's generated classes (the test session did within a minute): the JVM then stops
# compiling for good ("CodeCache is full. Compiler has been disabled") and fails any call that needs a new
# method-handle intrinsic (`InternalError: no such method: MethodHandle.linkToSpecial`, seen in Iceberg's
# commits). So it keeps the tiered default, 240 MiB, only reserved (not committed) until used.
LOCAL_CLIENT_JIT_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m -XX:+UseParallelGC"
LOCAL_TIERED_JIT_OPTIONS = (
    "-XX:+UseParallelGC -XX:Tier4InvocationThreshold=50000 -XX:Tier4MinInvocationThreshold=6000 "
    "-XX:Tier4CompileThreshold=150000 -XX:Tier4BackEdgeThreshold=400000"
)
MIB = 1 << 20
# The driver's log4j 2 configuration (lakehouse/jvm/log4j2-driver.properties): no start-up notices in the
# CLI's output. Quoted for Spark, which splits `extraJavaOptions` on spaces outside quotes.
DRIVER_LOG_OPTION = shlex.quote(
    f"-Dlog4j2.configurationFile={Path(__file__).parent / 'jvm' / 'log4j2-driver.properties'}"
)
PYTHON_DAEMON_MODULE = "backfill_platform.lakehouse.python_workers"
# Spark fuses a plan's operators into one generated method per stage and keeps it up to 64 KB of
# bytecode, but the JVM compiles no method over 8,000 bytes (`-XX:+DontCompileHugeMethods`): the strict
# parse's stage (a lenient parse, strict checks, per-version typing and reasons) ran interpreted, 35% of
# a warm events pass's samples in that one method (JFR). At the JVM's limit Spark runs such a stage
# operator by operator, with split methods the JIT compiles. Measured on 3 days x 200k events, one
# process, medians of 3 warm passes: parse 8.2 -> 6.1 s, parse and classify 11.8 -> 9.8 s, the whole
# events pass 21.9 -> 20.5 s; the first pass of parse and classify 22.9 -> 11.2 s. (Compiling the huge
# methods instead, `-XX:-DontCompileHugeMethods`, ran warm passes faster but cost a fresh process more
# than it saved: the events step 63 -> 75 s.)
GENERATED_METHOD_LIMIT = 8000
# Classes PySpark looks up by their short name on every call (`F.when` resolves `functions` again each
# time, `PythonUtils` converts every list it hands over), imported one by one into the gateway's view.
# Without, py4j tries the name alone and then each of the view's package imports in turn, and every miss
# is a failed class load across Spark's ~250 jars: 0.94 ms against 0.21 ms per lookup, measured. An
# ingest of a small day makes ~560 of them (~0.4 s of its ~8.5 s); in a JFR profile of test_parsing they
# were a quarter of the driver JVM's samples. Nothing changes what is called, only how the name is found.
SHORT_NAME_CLASSES = ("org.apache.spark.sql.functions", "org.apache.spark.api.python.PythonUtils")


class SparkIcebergResource(LazyPySparkResource):
    """A Spark session with Iceberg's SQL extensions and the shared catalog, started on first use."""

    catalog: IcebergCatalogResource
    master: str = Field(default="local[*]", description="spark.master: local[*], spark://…, k8s://…, yarn.")
    iceberg_jars: str = Field(
        default="",
        description=(
            "Comma-separated jars providing Iceberg (a cluster's own); empty = the jars declared by Maven "
            "coordinates in lakehouse/jvm/pom.xml, as `make jars` resolved them."
        ),
    )
    spark_config: dict[str, Any] = Field(
        default_factory=dict,
        description=(
            "Extra Spark settings, applied last (they win), except three the platform forces: "
            "spark.sql.variable.substitute=false, spark.sql.ansi.enabled=false and "
            "spark.sql.session.timeZone=UTC."
        ),
    )
    local_jit: Literal["auto", "client", "tiered"] = Field(
        default="auto",
        description=(
            "Local masters only, the driver JVM's compiler: `client` (C1, fastest start), `tiered` (C1 "
            "then C2 for hot code, fastest on big reads), or `auto`: tiered when the run's first read "
            "(the archive files of its events window) is at least tiered_jit_from_mib, else client."
        ),
    )
    class_archive: bool = Field(
        default=True,
        description=(
            "Local masters only: start the driver JVM from the class-data archive `make jars` builds "
            "(lakehouse/class_archive.py; seconds off every run's start, nothing changes what runs)."
        ),
    )
    tiered_jit_from_mib: float = Field(
        default=8.0,
        description="With local_jit=auto: archive MiB (as stored) from which a run's JVM compiles with C2.",
    )
    _first_read_bytes: int | None = PrivateAttr(default=None)

    def session_for_read(self, read_bytes: int) -> Any:
        """The session, started (when it is not yet) with the JVM suited to a first read of `read_bytes`:
        the events step says how much archive it is about to read before asking for Spark."""
        if self._spark_session is None:
            self._first_read_bytes = read_bytes
        return self.spark_session

    def tiered(self, read_bytes: int | None = None) -> bool:
        """Whether a local session whose first read is `read_bytes` (None: unknown) compiles with C2."""
        return self.local_jit == "tiered" or (
            self.local_jit == "auto"
            and read_bytes is not None
            and read_bytes >= self.tiered_jit_from_mib * MIB
        )

    def java_options(self, read_bytes: int | None = None) -> str:
        """The local driver JVM's options for a session whose first read is `read_bytes` (None: unknown): its
        compiler, the class archive, and its logging (no start-up notices in the CLI's output)."""
        options = LOCAL_TIERED_JIT_OPTIONS if self.tiered(read_bytes) else LOCAL_CLIENT_JIT_OPTIONS
        shared = class_archive.java_option() if self.class_archive else ""
        return " ".join(o for o in (options, shared, DRIVER_LOG_OPTION) if o)

    def full_spark_config(self, read_bytes: int | None = None) -> dict[str, str]:
        """Every Spark setting of the session; `read_bytes` (else the hint of `session_for_read`) chooses a
        local driver's compiler."""
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        # Python workers (local or on a cluster's executors) run this environment's interpreter unless
        # PYSPARK_PYTHON says otherwise: on a cluster, every node must have it at the same path (one
        # image / shared venv), with this package installed, since transforms are imported by name.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        if self.iceberg_jars:
            jar_list = [jar.strip() for jar in self.iceberg_jars.split(",") if jar.strip()]
            jars = ",".join(with_jdbc_driver(jar_list, self.catalog.jdbc_uri))
        else:
            # spark.jars also ships them to a cluster's executors: nothing to install on the workers.
            # All declared jars, whatever the tier: the unused JDBC driver and the AWS bundle cost no
            # measurable session start (local[2], 4 starts each way), and one classpath is one thing to test.
            jars = ",".join(default_jars())
        # The platform's own JVM functions, whoever provides Iceberg.
        jars = f"{jars},{required_functions_jar()}"
        conf = {
            "spark.master": self.master,
            "spark.app.name": "backfill_platform",
            "spark.jars": jars,
            "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
            "spark.sql.defaultCatalog": self.catalog.name,
            "spark.sql.shuffle.partitions": "8",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.driver.memory": "4g",
            # PySpark's daemon, started so that a task does not re-read the workers' zip archives
            # (lakehouse/python_workers.py); executors import this package anyway (transforms, readers).
            "spark.python.daemon.module": PYTHON_DAEMON_MODULE,
            **self.catalog.spark_conf(),
        }
        hint = read_bytes if read_bytes is not None else self._first_read_bytes
        if self.master.startswith("local"):
            conf["spark.driver.extraJavaOptions"] = self.java_options(hint)
        if not self.master.startswith("local") or self.tiered(hint):
            # Big reads (and clusters): see GENERATED_METHOD_LIMIT. A small run keeps Spark's limit, where
            # compiling a stage twice (fused, then operator by operator) would cost more than it saves.
            conf["spark.sql.codegen.hugeMethodLimit"] = str(GENERATED_METHOD_LIMIT)
        conf.update({k: str(v) for k, v in self.spark_config.items()})
        # Spark would otherwise substitute `${env:…}`/`${system:…}` into any SQL text it parses, secrets
        # included (into error messages that reach run storage). Spec SQL never carries one (see
        # `specs.expressions`) and the platform's own SQL needs none: off, whatever `spark_config` says.
        conf["spark.sql.variable.substitute"] = "false"
        # Spark 4 turns ANSI mode on by default: a cast that cannot be made raises instead of giving null.
        # The platform's strict typing reads exactly that null as "this field does not type" and quarantines
        # the record naming the field; under ANSI one bad value would fail the whole run instead. Off on
        # every line, so both give the same outcomes and reasons (test_bad_input runs on both).
        conf["spark.sql.ansi.enabled"] = "false"
        # Partitions are UTC days and hours, and ISO times are read in the session's zone: another zone
        # would move events between days. Not a setting a run may change.
        conf["spark.sql.session.timeZone"] = "UTC"
        return conf

    def _init_session(self) -> None:
        if self._spark_session is None:
            from pyspark.sql import SparkSession

            # A wrong catalog or bucket fails here, named, before the run reads or writes anything.
            check_lakehouse(self.catalog)

            builder = SparkSession.builder
            for key, value in self.full_spark_config().items():
                builder = builder.config(key, value)
            self._spark_session = builder.getOrCreate()
            self._spark_session.sparkContext.setLogLevel("ERROR")
            import_short_names(self._spark_session.sparkContext._jvm)


def import_short_names(jvm: Any) -> None:
    """Import `SHORT_NAME_CLASSES` into a classic session's gateway view (`spark.sparkContext._jvm`)."""
    from py4j.java_gateway import java_import

    for name in SHORT_NAME_CLASSES:
        java_import(jvm, name)


SQLITE_JDBC_PREFIX = "jdbc:sqlite:"
# The variable each setting of the platform's catalog comes from (`catalog_from_env`), for messages.
SETTING_VARIABLES = {
    "rest_uri": settings.CATALOG_URI_ENV,
    "rest_token": settings.CATALOG_TOKEN_ENV,
    "rest_credential": settings.CATALOG_CREDENTIAL_ENV,
    "jdbc_uri": settings.CATALOG_JDBC_URI_ENV,
    "sql_uri": settings.CATALOG_SQL_URI_ENV,
    "warehouse": settings.WAREHOUSE_ENV,
    "jdbc_user": settings.CATALOG_USER_ENV,
    "jdbc_password": settings.CATALOG_PASSWORD_ENV,
}


def sqlite_database(jdbc_uri: str) -> Path | None:
    """The database file of an embedded catalog's JDBC URI (`jdbc:sqlite:[file:]PATH[?options]`); None
    for other catalogs."""
    if not jdbc_uri.startswith(SQLITE_JDBC_PREFIX):
        return None
    return Path(jdbc_uri.removeprefix(SQLITE_JDBC_PREFIX).split("?", 1)[0].removeprefix("file:"))


def sqlite_sql_database(sql_uri: str) -> Path | None:
    """The database file of an embedded catalog's SQLAlchemy URI (`sqlite[+driver]:///PATH`, decoded as
    SQLAlchemy decodes it); None for other catalogs and in-memory databases."""
    if not sql_uri:
        return None
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        url = make_url(sql_uri)
    except ArgumentError:  # not a URL SQLAlchemy reads: PyIceberg's catalog names it when it is opened
        return None
    return Path(url.database) if url.get_backend_name() == "sqlite" and url.database else None


def catalog_from_env(for_dagster: bool = True) -> IcebergCatalogResource:
    """The catalog of the current tier. In Dagster a secret (catalog password, REST token or credential)
    stays an `EnvVar`, resolved per run; outside Dagster (the CLI) it is read from the environment.

    A REST catalog when BACKFILL_PLATFORM_CATALOG_URI is set, else JDBC (default: the embedded SQLite
    catalog under the data directory). An S3 endpoint and region come from the standard AWS variables
    (AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL, AWS_REGION or AWS_DEFAULT_REGION)."""
    data = settings.data_dir()

    def secret(variable: str) -> Any:
        if not os.environ.get(variable):
            return None
        return EnvVar(variable) if for_dagster else os.environ[variable]

    rest_uri = os.environ.get(settings.CATALOG_URI_ENV, "").strip()
    endpoint = settings.s3_endpoint()
    default_jdbc = "" if rest_uri else f"jdbc:sqlite:{data}/catalog.db"
    default_sql = "" if rest_uri else f"sqlite:///{data}/catalog.db"
    default_warehouse = "" if rest_uri else f"file://{data}/warehouse"
    return IcebergCatalogResource(
        name=settings.env_or(settings.CATALOG_NAME_ENV, settings.DEFAULT_CATALOG_NAME),
        rest_uri=rest_uri,
        rest_token=secret(settings.CATALOG_TOKEN_ENV),
        rest_credential=secret(settings.CATALOG_CREDENTIAL_ENV),
        jdbc_uri=settings.env_or(settings.CATALOG_JDBC_URI_ENV, default_jdbc),
        sql_uri=settings.env_or(settings.CATALOG_SQL_URI_ENV, default_sql),
        warehouse=settings.env_or(settings.WAREHOUSE_ENV, default_warehouse),
        jdbc_password=secret(settings.CATALOG_PASSWORD_ENV),
        jdbc_user=os.environ.get(settings.CATALOG_USER_ENV) or None,
        s3_endpoint=endpoint,
        s3_region=settings.aws_region(),
        s3_path_style=settings.flag(settings.S3_PATH_STYLE_ENV, default=bool(endpoint)),
    )


ARCHIVE_CATALOG_ENV = "BACKFILL_PLATFORM_ARCHIVE_CATALOG_{name}_{setting}"


def archive_catalog_from_env(name: str) -> IcebergCatalogResource:
    """A REST catalog the platform reads archive tables from (`archive.catalog`), besides its own:
    BACKFILL_PLATFORM_ARCHIVE_CATALOG_<NAME>_URI (required), `_WAREHOUSE`, `_TOKEN`, `_CREDENTIAL`
    (secrets: read from the environment by the run that needs them), `_S3_ENDPOINT` (default: the
    platform's, from the standard AWS variables). Its storage credentials are the AWS SDK's default chain."""

    def setting(key: str) -> str:
        variable = ARCHIVE_CATALOG_ENV.format(name=name.upper(), setting=key)
        value = os.environ.get(variable, "").strip()
        if refused := control_characters_refused(variable, value):
            raise ValueError(refused)
        if key == "URI" and has_userinfo(value):
            raise ValueError(
                f"{variable} holds credentials before its host ({mask(value)}): give a bearer token in "
                f"{ARCHIVE_CATALOG_ENV.format(name=name.upper(), setting='TOKEN')} or OAuth2 client "
                f"credentials in {ARCHIVE_CATALOG_ENV.format(name=name.upper(), setting='CREDENTIAL')} instead"
            )
        return value

    uri = setting("URI")
    if not uri:
        raise ValueError(
            f"archive catalog {name!r} is not configured: set "
            f"{ARCHIVE_CATALOG_ENV.format(name=name.upper(), setting='URI')} to its REST endpoint"
        )
    endpoint = setting("S3_ENDPOINT") or settings.s3_endpoint()
    return IcebergCatalogResource(
        name=name,
        rest_uri=uri,
        rest_token=setting("TOKEN") or None,
        rest_credential=setting("CREDENTIAL") or None,
        warehouse=setting("WAREHOUSE"),
        s3_endpoint=endpoint,
        s3_region=settings.aws_region(),
        s3_path_style=settings.flag(settings.S3_PATH_STYLE_ENV, default=bool(endpoint)),
    )


def spark_from_env(catalog: IcebergCatalogResource) -> SparkIcebergResource:
    return SparkIcebergResource(
        catalog=catalog,
        master=settings.env_or(settings.SPARK_MASTER_ENV, "local[*]"),
        iceberg_jars=settings.env_or(settings.ICEBERG_JARS_ENV, ""),
        spark_config={},
    )


def open_catalog() -> Any:
    """The PyIceberg catalog of the current deployment tier (same database and warehouse as Spark's)."""
    return catalog_from_env(for_dagster=False).load()
