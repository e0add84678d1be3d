"""`make bench` (`backfill-platform bench`): the platform against bare Spark and DuckDB, in one run.

`harness` plans and runs it (one process per measured run, `child`), `baselines` are the minimal jobs,
`measure` reads Spark's event log, the driver JVM and the tables, `report` prints medians, ratios and
the targets. The last result is saved as JSON in `data/bench/result.json`.
"""

from __future__ import annotations


def run_bench(*args, **kwargs) -> dict:
    from backfill_platform.devtools.bench.harness import run_bench as run

    return run(*args, **kwargs)
