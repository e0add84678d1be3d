"""Where the Iceberg runtime jars come from.

The only offline source of an Iceberg runtime for Spark 3.5 is the `snowpark-connect-deps-iceberg` wheel,
whose jar lacks its relocated Jackson classes. `make setup` repairs that once (see `jar_repair`) and puts
the result beside the Python environment, so every process of that environment finds it without
configuration. A deployment that has a complete runtime jar names it in `BACKFILL_PLATFORM_ICEBERG_JARS`.
"""

from __future__ import annotations

import sys
from pathlib import Path

SPARK_RUNTIME_JAR_GLOB = "iceberg-spark-runtime-3.5_2.12-*.jar"
RELOCATED_JACKSON_JAR = "iceberg-jackson-relocated.jar"
SQLITE_JDBC_JAR = Path("/usr/share/java/sqlite-jdbc.jar")


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


def default_iceberg_jars() -> list[str]:
    """Jars for the embedded tier: the bundled runtime, its repaired Jackson, and the SQLite JDBC driver."""
    jackson = relocated_jackson_jar()
    if not jackson.exists():
        raise FileNotFoundError(
            f"{jackson} is missing: run `make setup` (it repairs the bundled Iceberg runtime jar), "
            "or set BACKFILL_PLATFORM_ICEBERG_JARS to a complete Iceberg runtime jar"
        )
    return [str(bundled_runtime_jar()), str(jackson), str(SQLITE_JDBC_JAR)]
