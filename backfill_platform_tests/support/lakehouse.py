"""Lakehouses of a test's own, and reading one through Spark.

The session's catalog (conftest's `data_dir`) is written by the test process only. A test whose
subprocesses commit (a CLI run, `dagster dev`'s runs) gives them a data directory of its own: once another
process has committed to a SQLite catalog, a long-lived session's pooled JDBC connection can fail its next
write with SQLITE_BUSY_SNAPSHOT (docs/limits.md). The test reads that lakehouse back through a
new Spark session bound to it (`lakehouse_session`), which has catalog connections of its own.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from backfill_platform import settings
from backfill_platform.lakehouse.resources import IcebergCatalogResource, catalog_from_env


def own_data_dir(root: Path, archive: Path | None = None) -> Path:
    """`root` as a data directory (catalog, warehouse, archive). With `archive`, a copy of that playback
    archive as `archive/playback`, where the built-in stream reads it: the session's archive is only read."""
    root.mkdir(parents=True, exist_ok=True)
    if archive is not None:
        shutil.copytree(archive, root / "archive" / "playback")
    return root


def catalog_of(data_dir: Path) -> IcebergCatalogResource:
    """The embedded tier's catalog of `data_dir`, as a process with that data directory configures it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(settings.DATA_DIR_ENV, str(data_dir))
        return catalog_from_env(for_dagster=False)


def lakehouse_session(spark, data_dir: Path):
    """A new Spark session whose catalog (same name) is `data_dir`'s, with JDBC connections of its own: it
    sees what other processes committed there. The test process only reads through it.

    PySpark binds `RDD.toDF` to the newest session it constructs, and the platform builds its archive
    listing with `rdd.toDF` (pipeline/events/parse.py): left so, every later ingestion of this process would run
    in this session, on this catalog. The binding is restored."""
    from pyspark.rdd import RDD

    to_df = RDD.toDF
    try:
        session = spark.newSession()
    finally:
        RDD.toDF = to_df
    for key, value in catalog_of(data_dir).spark_conf().items():
        session.conf.set(key, value)
    return session
