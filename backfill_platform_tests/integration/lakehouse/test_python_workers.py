"""PySpark's Python workers of the session run under the platform's daemon (lakehouse/python_workers.py), so
a task re-reads a zip archive on the workers' path only when the archive changed. The patch's reading rules
themselves, in this process: unit/lakehouse/test_python_workers_zipimport.py."""

from __future__ import annotations

import pytest

from backfill_platform.lakehouse import python_workers


@pytest.mark.both_spark_lines
def test_the_sessions_python_workers_run_under_the_platform_daemon(spark) -> None:
    def patched_in_worker(_rows):
        import zipimport as worker_zipimport

        from backfill_platform.lakehouse.python_workers import _PATCHED

        yield bool(getattr(worker_zipimport.zipimporter.invalidate_caches, _PATCHED, False))

    flags = spark.sparkContext.parallelize(range(4), 2).mapPartitions(patched_in_worker).collect()
    assert flags == [True, True]
    assert spark.conf.get("spark.python.daemon.module") == python_workers.__name__
