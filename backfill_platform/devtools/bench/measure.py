"""What a bench run is measured by, besides its clock: Spark's event log, the driver JVM, the tables.

* **Spark jobs** are counted from the run's Spark event log (`spark.eventLog.enabled`, one directory per
  run): every `SparkListenerJobStart`. Jobs *after the events write* are those submitted after the
  events table's newest Iceberg snapshot was created, a timestamp read back from the table (no marker
  in the platform's code is needed, and whatever the platform does after its write is counted).
* **Driver JVM peak memory** is the peak resident set (`VmHWM` of `/proc/<pid>/status`) of the run's JVM,
  read by the run itself when its job is done; its pid comes from the JVM (`ProcessHandle`). The event
  log's peak heap of the driver (`SparkListenerStageExecutorMetrics`) is kept beside it.
* **Rows** are read back from the run's own catalog with PyIceberg (a scan of one column), after the run.
* **Where a run's time goes**: each Spark job's seconds, its tasks' seconds and CPU, and what submitted it
  (the platform's job description, e.g. `write lake.raw.playback_events`; else PySpark's call site,
  `pipeline/events/ingest.py:329`; else its stage's name, `collect at PlainLines.java:55` for a job the
  JVM submitted), from the same event log (`spark_jobs`).
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

# Added to the platform's own Spark settings, for the baseline and the platform alike.
EVENT_LOG_SETTINGS = {
    "spark.eventLog.enabled": "true",
    "spark.eventLog.logStageExecutorMetrics": "true",
    "spark.executor.metrics.pollingInterval": "1s",
    # One plain JSON-lines file per application, as Spark 3.5 writes by default; Spark 4 would roll it
    # into a folder of zstd-compressed parts, which `read_event_log` does not read.
    "spark.eventLog.rolling.enabled": "false",
    "spark.eventLog.compress": "false",
}


def event_log_settings(directory: Path) -> dict[str, str]:
    directory.mkdir(parents=True, exist_ok=True)
    return {**EVENT_LOG_SETTINGS, "spark.eventLog.dir": directory.resolve().as_uri()}


def vm_hwm_kib(pid: int) -> int | None:
    """Peak resident set size of a process, in KiB (Linux)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def read_event_log(directory: Path) -> list[dict[str, Any]]:
    """The events of the one application that logged into `directory` (finished or still in progress)."""
    files = sorted(p for p in directory.glob("*") if p.is_file())
    if not files:
        return []
    events = []
    with files[-1].open() as lines:
        for line in lines:
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:  # a truncated last line of an application that died
                break
    return events


def spark_figures(directory: Path, after_ms: int | None, since_ms: float = 0) -> dict[str, Any]:
    """Jobs of the run (submitted from `since_ms`, epoch ms: not those of an untimed warm-up before it),
    jobs submitted after `after_ms` (the events write), and the driver's peak heap."""
    events = read_event_log(directory)
    starts = [
        e for e in events if e.get("Event") == "SparkListenerJobStart" and e["Submission Time"] >= since_ms
    ]
    heap = [
        e["Executor Metrics"].get("JVMHeapMemory", 0)
        for e in events
        if e.get("Event") == "SparkListenerStageExecutorMetrics" and e.get("Executor ID") == "driver"
    ]
    return {
        "spark_jobs": len(starts) if events else None,
        "jobs_after_events_write": (
            sum(1 for e in starts if e["Submission Time"] > after_ms) if after_ms is not None else None
        ),
        "driver_heap_peak_mib": round(max(heap) / 2**20, 1) if heap else None,
    }


def read_back(run_dir: Path, catalog_name: str, table: str, start: datetime, end: datetime) -> dict[str, Any]:
    """Rows of `table` in [start, end) in a run's own catalog, and when its current snapshot was made."""
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.expressions import And, GreaterThanOrEqual, LessThan

    catalog = SqlCatalog(
        catalog_name, uri=f"sqlite:///{run_dir}/catalog.db", warehouse=(run_dir / "warehouse").as_uri()
    )
    if not catalog.table_exists(table):
        return {"rows": None, "snapshot_ms": None}
    loaded = catalog.load_table(table)
    snapshot = loaded.current_snapshot()
    in_range = And(
        GreaterThanOrEqual("event_time", start.isoformat()), LessThan("event_time", end.isoformat())
    )
    scan = loaded.scan(row_filter=in_range, selected_fields=("event_id",))
    rows = scan.to_arrow().num_rows if snapshot else 0
    return {"rows": rows, "snapshot_ms": snapshot.timestamp_ms if snapshot else None}


def job_intervals(jobs: list[dict[str, Any]]) -> list[tuple[float, float]]:
    """Each of `spark_jobs`' jobs as [submission, completion] in epoch seconds, by submission."""
    return sorted((j["submitted_ms"] / 1000, j["submitted_ms"] / 1000 + j["seconds"]) for j in jobs)


def busy_seconds(intervals: list[tuple[float, float]], low: float, high: float) -> float:
    """Seconds of [low, high] during which at least one Spark job ran (their union, clipped)."""
    busy, reached = 0.0, low
    for start, end in intervals:
        start, end = max(start, reached), min(end, high)
        if end > start:
            busy += end - start
            reached = end
    return busy


def step_figures(
    steps: dict[str, list[float]], jobs: list[dict[str, Any]], days: int
) -> dict[str, dict[str, float]]:
    """Per step of a platform run: its seconds, the seconds none of its Spark jobs (`spark_jobs`) ran (the
    driver's own work: Dagster's events, check evaluations, ledger rows, catalog calls, planning) and
    those per partition."""
    intervals = job_intervals(jobs)
    figures = {}
    for key, (low, high) in sorted(steps.items(), key=lambda item: item[1][0]):
        seconds = high - low
        driver = seconds - busy_seconds(intervals, low, high)
        figures[key] = {
            "seconds": round(seconds, 3),
            "driver_s": round(driver, 3),
            "driver_ms_per_partition": round(1000 * driver / max(days, 1), 1),
        }
    return figures


def _job_label(start: dict[str, Any]) -> str:
    """What submitted a job: the platform's description (its writes set one), else PySpark's call site,
    else its first stage's name (a job the JVM submitted, e.g. `collect at PlainLines.java:55`); shortened
    to the platform's module."""
    properties = start.get("Properties") or {}
    # The result stage (the job's own, the highest id) carries the call site; the others are its parents.
    result_stage = max(start.get("Stage Infos") or [{}], key=lambda stage: stage.get("Stage ID", -1))
    label = (
        properties.get("spark.job.description")
        or properties.get("callSite.short")
        or result_stage.get("Stage Name")
        or "other"
    )
    return label.split("backfill_platform/", 1)[-1] if "backfill_platform/" in label else label


def spark_jobs(directory: Path, since_ms: float = 0) -> list[dict[str, Any]]:
    """A run's Spark jobs (submitted from `since_ms`) in the order they were submitted: what submitted each
    (`_job_label`), its wall seconds, its tasks, and their seconds and CPU seconds (of the stages it ran;
    a stage whose shuffle output was reused runs no task)."""
    events = read_event_log(directory)
    tasks: dict[int, list[float]] = {}  # stage -> [tasks, seconds, CPU seconds]
    for e in events:
        if e.get("Event") == "SparkListenerTaskEnd" and e.get("Task Metrics"):
            figures = tasks.setdefault(e["Stage ID"], [0, 0.0, 0.0])
            figures[0] += 1
            figures[1] += e["Task Metrics"].get("Executor Run Time", 0) / 1000
            figures[2] += e["Task Metrics"].get("Executor CPU Time", 0) / 1e9
    started = {
        e["Job ID"]: e
        for e in events
        if e.get("Event") == "SparkListenerJobStart" and e["Submission Time"] >= since_ms
    }
    jobs = []
    for e in events:
        if e.get("Event") != "SparkListenerJobEnd" or e["Job ID"] not in started:
            continue
        start = started[e["Job ID"]]
        stages = [tasks.get(info["Stage ID"], [0, 0.0, 0.0]) for info in start.get("Stage Infos", [])]
        jobs.append(
            {
                "job": e["Job ID"],
                "label": _job_label(start),
                "submitted_ms": start["Submission Time"],
                "seconds": round((e["Completion Time"] - start["Submission Time"]) / 1000, 2),
                "tasks": int(sum(stage[0] for stage in stages)),
                "task_s": round(sum(stage[1] for stage in stages), 2),
                "cpu_s": round(sum(stage[2] for stage in stages), 2),
            }
        )
    return sorted(jobs, key=lambda job: job["submitted_ms"])


def jobs_busy_seconds(jobs: list[dict[str, Any]]) -> float:
    """Seconds during which at least one of `spark_jobs`' jobs ran (a broadcast's job overlaps another)."""
    intervals = job_intervals(jobs)
    return busy_seconds(intervals, intervals[0][0], max(end for _, end in intervals)) if intervals else 0.0
