"""A transform beside its spec runs on Spark's executors (specs/transforms.py): written as a module, a package
or a file in a subfolder, its Python UDF is shipped to the workers, never imported there (no PYTHONPATH).
That each loads at all, without Spark: unit/specs/test_spec_references.py."""

from __future__ import annotations

from datetime import datetime

from backfill_platform_tests.support.projects import load_project
from backfill_platform_tests.support.spec_transforms import VERSIONS, write_transforms_beside_specs


def test_a_transform_beside_the_spec_runs_its_python_udf_on_executors(tmp_path, spark):
    spec = load_project(write_transforms_beside_specs(tmp_path)).datasets["views_per_title"]
    events = spark.createDataFrame(
        [("e1", datetime(2026, 10, 1, 1), "t0001"), ("e2", datetime(2026, 10, 1, 2), "t0002")],
        "event_id string, event_time timestamp, title_id string",
    ).repartition(2)  # two tasks: the UDF is shipped to the Python workers, never imported there
    for name in VERSIONS:
        rows = spec.versions[name].load_transform()(events).collect()
        assert sorted(row.label for row in rows) == [f"{name}:T0001", f"{name}:T0002"]
