"""Where the Iceberg runtime jars come from.

The only offline source of an Iceberg runtime for Spark 3.5 is the `snowpark-connect-deps-iceberg` wheel,
whose jar lacks its relocated Jackson classes. `make setup` repairs that once (see `jar_repair`) and puts
the result beside the Python environment, so every process of that environment finds it without
configuration. A deployment that has a complete runtime jar names it in `BACKFILL_PLATFORM_ICEBERG_JARS`.

The catalog database's JDBC driver follows the catalog URI: `jdbc:sqlite:` takes Debian's SQLite driver,
`jdbc:postgresql:` Debian's PostgreSQL driver (`libpostgresql-jdbc-java`, installed by `make setup`); it is
added to the Iceberg jars whichever way those were found, so no tier lists a driver by hand.
"""

from __future__ import annotations

import sys
from pathlib import Path

SPARK_RUNTIME_JAR_GLOB = "iceberg-spark-runtime-3.5_2.12-*.jar"
RELOCATED_JACKSON_JAR = "iceberg-jackson-relocated.jar"
SQLITE_JDBC_JAR = Path("/usr/share/java/sqlite-jdbc.jar")
POSTGRES_JDBC_JAR = Path("/usr/share/java/postgresql.jar")
# JDBC URI prefix -> (driver jar, the Debian package that provides it).
JDBC_DRIVERS = {
    "jdbc:sqlite:": (SQLITE_JDBC_JAR, "libxerial-sqlite-jdbc-java"),
    "jdbc:postgresql:": (POSTGRES_JDBC_JAR, "libpostgresql-jdbc-java"),
}


def bundled_runtime_jar() -> Path:
    """The Iceberg Spark runtime jar shipped in the `snowpark_connect_deps_iceberg` wheel."""
    import snowpark_connect_deps_iceberg  # imported lazily: only needed when Spark starts

    jar_dir = Path(next(iter(snowpark_connect_deps_iceberg.__path__))) / "jars"
    matches = sorted(jar_dir.glob(SPARK_RUNTIME_JAR_GLOB))
    if not matches:
        raise FileNotFoundError(f"no {SPARK_RUNTIME_JAR_GLOB} in {jar_dir}; reinstall with `make setup`")
    return matches[-1]


def repaired_jar_dir() -> Path:
    """Folder of jars built by `make setup` for this Python environment (not under version control)."""
    return Path(sys.prefix) / "share" / "backfill_platform" / "jars"


def relocated_jackson_jar() -> Path:
    return repaired_jar_dir() / RELOCATED_JACKSON_JAR


def jdbc_driver_jar(jdbc_uri: str) -> Path | None:
    """The JDBC driver jar for a catalog URI (None for a database this module does not know).

    Raises if the driver of a known database is not installed, naming the package to install."""
    for prefix, (jar, package) in JDBC_DRIVERS.items():
        if jdbc_uri.startswith(prefix):
            if not jar.exists():
                raise FileNotFoundError(
                    f"{jar} is missing (JDBC driver for {prefix}… catalogs): run `make setup`, or "
                    f"`apt-get install {package}`, or name a driver jar in BACKFILL_PLATFORM_ICEBERG_JARS"
                )
            return jar
    return None


def with_jdbc_driver(jars: list[str], jdbc_uri: str) -> list[str]:
    """A jar list named by hand (BACKFILL_PLATFORM_ICEBERG_JARS) plus the catalog's JDBC driver when it is
    installed and the list names no driver of that kind (by file name); if it is not installed, the list
    is taken to provide a driver itself."""
    try:
        driver = jdbc_driver_jar(jdbc_uri)
    except FileNotFoundError:
        return jars
    if driver is None:
        return jars
    stem = driver.name.removesuffix(".jar")  # sqlite-jdbc-3.45.1.0.jar, postgresql-42.7.4.jar
    if any(Path(jar).name.startswith(stem) for jar in jars):
        return jars
    return [*jars, str(driver)]


def default_iceberg_jars(jdbc_uri: str = "jdbc:sqlite:") -> list[str]:
    """Jars for a catalog at `jdbc_uri`: the bundled runtime, its repaired Jackson, and the JDBC driver
    of the catalog database (SQLite for the embedded tier, PostgreSQL for the team tier)."""
    jackson = relocated_jackson_jar()
    if not jackson.exists():
        raise FileNotFoundError(
            f"{jackson} is missing: run `make setup` (it repairs the bundled Iceberg runtime jar), "
            "or set BACKFILL_PLATFORM_ICEBERG_JARS to a complete Iceberg runtime jar"
        )
    driver = jdbc_driver_jar(jdbc_uri)
    return [str(bundled_runtime_jar()), str(jackson), *([str(driver)] if driver else [])]
