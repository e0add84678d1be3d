"""The local driver JVM's class-data archive: Spark, Iceberg and their libraries, loaded and verified once.

Every Dagster run is a process of its own, and on a local master every process starts a driver JVM that
loads and verifies some 20,000 classes before its first job. Java's class-data sharing (CDS) maps them from
an archive instead. `make jars` builds one for this environment (`devtools.class_archive`: a small backfill
in a JVM started with `-XX:ArchiveClassesAtExit`), and a local master's driver starts with
`-XX:SharedArchiveFile` when it exists. Measured on 2 cores (one day of 2,000 events, cold process): session
start 5.5 s -> 2.7 s, first ingest 25 s -> 18.7 s. Nothing changes what runs: the same classes, read from a
file the JVM validates (a JDK or classpath that differs from the archive's makes it start without it,
silently: `-Xlog:cds*=off` keeps its warnings out of the output of runs and the CLI; `make jars` rebuilds
the archive when its stamp differs).
"""

from __future__ import annotations

import shlex
from pathlib import Path

from backfill_platform.lakehouse.jars import jar_dir

ARCHIVE_NAME = "driver-classes.jsa"


def archive_path() -> Path:
    """Where this Python environment's archive lives (beside its jars; built by `make jars`)."""
    return jar_dir().parent / ARCHIVE_NAME


def stamp_path() -> Path:
    """What the archive was built from (JDK, Spark, jars): a different stamp means build it again."""
    return archive_path().with_suffix(".stamp")


def java_option(path: Path | None = None) -> str:
    """`-XX:SharedArchiveFile=…` (and its warnings off) when the archive exists, else nothing. Quoted for
    Spark, which splits `extraJavaOptions` on spaces outside quotes."""
    path = path if path is not None else archive_path()
    return f"{shlex.quote(f'-XX:SharedArchiveFile={path}')} -Xlog:cds*=off" if path.is_file() else ""
