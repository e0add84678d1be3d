"""One measured bench run, in a process of its own: `python -m backfill_platform.devtools.bench.child SPEC.json`.

The harness starts one per run, as a user's run would start (interpreter, imports, JVM), with the
environment pointing the catalog and warehouse at the run's own directory. The run writes what only it
can know (when its job began and ended, its JVM's pid and peak memory) to the result file of the spec.
"""

from __future__ import annotations

import json
import resource
import sys
import tempfile
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from backfill_platform.devtools.bench.measure import event_log_settings, vm_hwm_kib
from backfill_platform.specs.durations import DAY, midnight

EVENTS = ("raw", "playback_events")
PLATFORM_ASSETS = {
    "events": [EVENTS],
    "backfill": [EVENTS, ("shadow", "views_per_title__v2"), ("prod", "views_per_title_production")],
    # The same archive's events by UTC hour (`playback_hourly`): 24 partitions a day instead of one.
    "events_hourly": [("raw", "playback_hourly_events")],
    # A year of hours validated and promoted, in one run (the bench's own hourly dataset).
    "backfill_hourly": [
        ("raw", "playback_hourly_events"),
        ("shadow", "views_hourly__v1"),
        ("prod", "views_hourly_production"),
    ],
}


def _range_tags(variant: str, start: datetime, end: datetime) -> dict[str, str]:
    """The run's partition range: its days, or its hours for the hourly variant."""
    from backfill_platform.dagster_internals import (
        ASSET_PARTITION_RANGE_END_TAG,
        ASSET_PARTITION_RANGE_START_TAG,
    )
    from backfill_platform.devtools.demo.story import range_tags

    if variant.endswith("_hourly"):
        last = end - timedelta(hours=1)
        return {
            ASSET_PARTITION_RANGE_START_TAG: f"{start:%Y-%m-%d-%H}:00",
            ASSET_PARTITION_RANGE_END_TAG: f"{last:%Y-%m-%d-%H}:00",
        }
    return range_tags(start.date(), (end - DAY).date())


def _spark_resource(event_log: Path):
    """The platform's Spark resource of the current tier, plus the event log (as `baseline_spark_conf`)."""
    from backfill_platform.lakehouse.resources import SparkIcebergResource, catalog_from_env, spark_from_env

    catalog = catalog_from_env()
    base = spark_from_env(catalog)
    return SparkIcebergResource(
        catalog=catalog,
        master=base.master,
        iceberg_jars=base.iceberg_jars,
        spark_config={**base.spark_config, **event_log_settings(event_log)},
    )


def _stop_spark() -> dict[str, Any]:
    """The driver JVM's pid and peak resident set, read before the session stops (flushing the log)."""
    if "pyspark" not in sys.modules:  # DuckDB
        return {}
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    if context is None:
        return {}
    jvm = context._jvm
    pid = int(jvm.java.lang.ProcessHandle.current().pid())
    peak = vm_hwm_kib(pid)
    arguments = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    context.stop()
    return {
        "jvm_pid": pid,
        "driver_peak_rss_mib": round(peak / 1024, 1) if peak else None,
        # The compiler the driver JVM really ran with (`SparkIcebergResource.local_jit`).
        "jit": "client" if "-XX:TieredStopAtLevel=1" in arguments else "tiered",
    }


def run_spark_baseline(spec: dict, start: datetime, end: datetime) -> tuple[float, float, dict]:
    """Plain PySpark with the platform's settings, computed by the harness (no Dagster import here)."""
    from pyspark.sql import SparkSession

    from backfill_platform.devtools.bench.baselines import spark_baseline

    began = time.time()
    builder = SparkSession.builder
    for key, value in spec["spark_conf"].items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark_baseline(spark, spec["files"], start, end, spec["spark_conf"]["spark.sql.defaultCatalog"])
    return began, time.time(), {}


def run_duckdb_baseline(spec: dict, start: datetime, end: datetime) -> tuple[float, float, dict]:
    from backfill_platform.devtools.bench.baselines import duckdb_baseline
    from backfill_platform.lakehouse.resources import catalog_from_env

    began = time.time()
    duckdb_baseline(spec["files"], start, end, catalog_from_env(for_dagster=False).load())
    return began, time.time(), {}


def run_platform(spec: dict, start: datetime, end: datetime) -> tuple[float, float, dict]:
    """The platform's run of the range, in process (as `dg launch` or the demo runs it), and when each of
    its steps started and ended (epoch seconds, from the run's own event log)."""
    from dagster import AssetKey, DagsterInstance, materialize

    from backfill_platform import settings
    from backfill_platform.components.registry import package_project, project_definitions
    from backfill_platform.devtools.demo.story import quiet, range_tags

    # The range as seen two days after its end, so that every day of it has settled (its lateness
    # horizon passed) whatever today's date: a year of days reaches beyond today. As tests do.
    seen_at = max(settings.now(), end + 2 * DAY)
    settings.now = lambda: seen_at
    project = package_project()
    if spec["variant"] == "backfill_hourly":
        from backfill_platform.devtools.bench.hourly_dataset import bench_project

        # A project of the bench's own, in the run's folder: the package's components and the hourly dataset.
        project = bench_project(
            Path(tempfile.mkdtemp(prefix="project-", dir=Path(spec["event_log"]).parents[1]))
        )
    defs = project_definitions(project)
    spark = _spark_resource(Path(spec["event_log"]))
    assets = [defs.get_assets_def(AssetKey(list(key))) for key in PLATFORM_ASSETS[spec["variant"]]]
    if spec.get("warm_up_days"):
        # Untimed: the days before, so that the timed run finds a warm JVM and session, as a
        # long-lived process would.
        warm_up = start - timedelta(days=spec["warm_up_days"])
        tags = range_tags(warm_up.date(), (start - DAY).date())
        if not materialize(assets, resources={"spark": spark}, tags=tags, run_config=quiet("ERROR")).success:
            raise SystemExit(f"bench warm-up of {spec['variant']} failed")
    instance = DagsterInstance.ephemeral()
    began = time.time()
    result = materialize(
        assets,
        resources={"spark": spark},
        tags=_range_tags(spec["variant"], start, end),
        run_config=quiet("ERROR"),
        instance=instance,
    )
    ended = time.time()
    if not result.success:
        raise SystemExit(f"bench run {spec['variant']} failed")
    return began, ended, {"steps": step_windows(instance, result.run_id)}


def step_windows(instance, run_id: str) -> dict[str, list[float]]:
    """Each step's [start, end] (epoch seconds) from the run's event log."""
    from dagster import DagsterEventType

    windows: dict[str, list[float]] = {}
    for entry in instance.all_logs(run_id):
        event = entry.dagster_event
        if event is None or event.step_key is None:
            continue
        if event.event_type == DagsterEventType.STEP_START:
            windows.setdefault(event.step_key, [entry.timestamp, entry.timestamp])[0] = entry.timestamp
        elif event.event_type in (DagsterEventType.STEP_SUCCESS, DagsterEventType.STEP_FAILURE):
            windows.setdefault(event.step_key, [entry.timestamp, entry.timestamp])[1] = entry.timestamp
    return windows


RUNNERS = {"baseline": run_spark_baseline, "duckdb": run_duckdb_baseline}


class LiveHeapWatcher(threading.Thread):
    """The driver JVM's live heap: what its heap pools held after their latest garbage collection
    (`MemoryPoolMXBean.getCollectionUsage`), sampled twice a second once Spark runs; the peak is kept.
    Unlike the resident set, this does not grow with how lazily the JVM returns memory."""

    def __init__(self, poll: float = 0.5):
        super().__init__(daemon=True, name="live-heap")
        self.poll, self.peak, self.stopped = poll, 0, threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(self.poll):
            self.sample()

    def sample(self, collect: bool = False) -> None:
        if "pyspark" not in sys.modules:
            return
        from pyspark import SparkContext

        context = SparkContext._active_spark_context
        if context is None:
            return
        try:
            if collect:  # a short run may not have collected at all yet
                context._jvm.java.lang.System.gc()
            factory = context._jvm.java.lang.management.ManagementFactory
            live = 0
            for pool in factory.getMemoryPoolMXBeans():
                usage = pool.getCollectionUsage() if pool.getType().name() == "HEAP" else None
                live += usage.getUsed() if usage is not None else 0
            self.peak = max(self.peak, live)
        except Exception:  # the JVM stopping under the sample: the peak so far stands
            return

    def stop(self) -> float | None:
        self.stopped.set()
        self.join()
        self.sample(collect=True)
        return round(self.peak / 2**20, 1) if self.peak else None


def main(spec_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    start = midnight(spec["start"])
    end = start + spec["days"] * DAY
    heap = LiveHeapWatcher()
    heap.start()
    runner = RUNNERS.get(spec["variant"], run_platform)
    began, ended, extra = runner(spec, start, end)
    result = {"job_began": began, "job_ended": ended, **extra, "driver_live_heap_peak_mib": heap.stop()}
    result.update(_stop_spark())
    result["process_peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    Path(spec["result"]).write_text(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1])
