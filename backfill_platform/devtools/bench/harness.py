"""`make bench`: the platform against the minimal jobs, in one run, on archives generated for it.

Every measured run is a fresh process (`bench.child`: interpreter, imports, JVM start, the job), as a
user's run is, with a catalog and warehouse of its own under `runs/NN-<variant>/`: a run never finds
tables, snapshots or catalog state another variant left, every repetition starts from the same state,
and each run's rows can be read back on their own. The one exception is the daily sequence of (d),
whose one-day runs refresh the same lakehouse day after day, as the daily refresh does.

Plan: (a) bare Spark, (b) the events step, (c) the validated backfill and (e) DuckDB, interleaved
`repetitions` times on `days x events_per_day`; then on a `refresh_events_per_day` archive (d) one run
of `range_days` days and `range_days` one-day runs, and the validated backfill of `short_days` and
`long_days` (driver memory, and with (d) the marginal seconds per day).

With `scale` (`make bench BENCH_ARGS=--scale`), two cases users meet are added, each variant once and
interleaved, against bare Spark on the same archive: (f) the big day (`big_days x big_events_per_day`,
one file per hour), (g) many small files (`files_days` of a low-volume stream, `files_events_per_day`
events a day in `files_per_hour` files an hour) and (h) the big day `huge_copies` times over
(`multiply`: its files side by side, ids made distinct per copy), for how cost grows with size. Platform
runs report each step's seconds and the seconds per partition no Spark job ran (`measure.step_figures`).

With `other_line` (the Python of another Spark line's environment, e.g. `.venv-spark-4.1/bin/python`;
`make bench` passes it), (a)-(c) of the comparison, the big day and (h) run again on that line, interleaved
with the default line's runs, and their ratios are reported beside the default's.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, replace
from datetime import UTC, date, datetime, timedelta
from functools import partial
from pathlib import Path

from rich.console import Console

from backfill_platform import settings
from backfill_platform.devtools.bench.baselines import DUCKDB_TABLE, SPARK_TABLE
from backfill_platform.devtools.bench.config import DEFAULT_LINE, OTHER_LINE, BenchConfig
from backfill_platform.devtools.bench.measure import (
    event_log_settings,
    read_back,
    spark_figures,
    spark_jobs,
    step_figures,
)
from backfill_platform.devtools.bench.report import print_report, summarize
from backfill_platform.specs.durations import DAY, HOUR, midnight

STREAM = "playback"
RESULT_FILE = "result.json"


@dataclass
class Archive:
    label: str
    data_dir: Path  # BACKFILL_PLATFORM_DATA of the runs on this archive
    days: int
    events_per_day: int
    totals: dict
    written: dict[str, int]  # the generator's truth: events a correct ingestion writes, per day


@dataclass
class Run:
    label: str
    variant: str  # baseline | events | backfill | duckdb
    group: str  # compare | range | daily | warm | short | long | big | files | huge
    archive: Archive
    first: date
    days: int
    run_dir: Path
    line: str = DEFAULT_LINE  # DEFAULT_LINE or OTHER_LINE: which Spark line's Python runs it


def duckdb_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("duckdb") is not None


def _stream():
    from backfill_platform.components.registry import package_project, project_specs

    return project_specs(package_project()).streams[STREAM]


def generate(
    out: Path, label: str, start: date, days: int, events_per_day: int, files_per_hour: int = 0
) -> Archive:
    """A clean archive: no line the minimal jobs would keep and the platform quarantine (malformed, beyond
    the lateness, broken clocks), so both must write the same rows. Duplicates, conflicting copies, late
    lines, clocks a few minutes ahead and the schema change stay."""
    from backfill_platform.devtools.generator.playback import GeneratorConfig, generate_playback_archive
    from backfill_platform.specs.archive_location import check_archive_root

    data = out / "archives" / label
    config = GeneratorConfig(
        start=start,
        days=days,
        events_per_day=events_per_day,
        malformed_fraction=0.0,
        very_late_fraction=0.0,
        broken_clock_fraction=0.0,
        # Several files an hour is the quiet stream of (g): its quiet hours get an empty file.
        files_per_hour=max(files_per_hour, 1),
        file_every_hour=files_per_hour > 0,
    )
    truth = generate_playback_archive(check_archive_root(_stream().archive, data), config)
    written = {day: figures["written"] for day, figures in truth["partitions"].items()}
    return Archive(label, data, days, events_per_day, truth["totals"], written)


EVENT_ID_KEY = b'"event_id":"'


def _copy_file(source: Path, dest: Path, copy: int) -> tuple[int, int]:
    """One file of copy `copy` (0 is the original): every event id prefixed with the copy's mark. Returns
    (lines, bytes written)."""
    data = gzip.decompress(source.read_bytes())
    lines = data.count(b"\n")
    if copy:
        ids = data.count(EVENT_ID_KEY)
        if ids != lines:  # the generator's clean archive: one id per line, always spelled so
            raise ValueError(f"{source}: {ids} event ids in {lines} lines; cannot make its copies distinct")
        data = data.replace(EVENT_ID_KEY, EVENT_ID_KEY + b"c%02d-" % copy)
    # Level 1: a copy ten times the big day is written in minutes; readers do not care.
    packed = gzip.compress(data, compresslevel=1, mtime=0)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(packed)
    return lines, len(packed)


def multiply(source: Archive, out: Path, label: str, copies: int) -> Archive:
    """`copies` times `source`'s events: its archive's files side by side in every hour (parts
    0001..`copies`), each copy's event ids made distinct by a prefix. Every copy keeps the source's
    duplicates, conflicting copies, lateness and schema change, so the truth is the source's, times
    `copies`. The generator holds an archive's lines in memory; this streams file by file, so ten times
    the big day fits a machine that cannot generate it."""
    from backfill_platform.specs.archive_location import check_archive_root

    archive = _stream().archive
    src_root = check_archive_root(archive, source.data_dir)
    data = out / "archives" / label
    root = check_archive_root(archive, data)
    jobs = []
    for path in sorted(src_root.rglob("*-0001.jsonl.gz")):
        relative = path.relative_to(src_root)
        for copy in range(copies):
            name = relative.name.replace("-0001.jsonl.gz", f"-{copy + 1:04d}.jsonl.gz")
            jobs.append((path, root / relative.parent / name, copy))
    with ProcessPoolExecutor(max_workers=os.cpu_count()) as pool:
        done = list(pool.map(_copy_file, *zip(*jobs, strict=True), chunksize=4))
    lines = sum(n for n, _ in done)
    if lines != copies * source.totals["lines"]:
        raise ValueError(f"{label}: {lines:,} lines copied, {copies} x {source.totals['lines']:,} expected")
    totals = {"lines": lines, "files": len(done), "bytes": sum(size for _, size in done)}
    written = {day: copies * count for day, count in source.written.items()}
    return Archive(label, data, source.days, copies * source.events_per_day, totals, written)


def window_files(archive: Archive, first: date, days: int) -> list[str]:
    """The archive files the platform's events step reads for the range: its ingestion-hour window."""
    from backfill_platform.pipeline.hour_mapping import ReadWindow
    from backfill_platform.specs.archive_location import check_archive_root

    stream = _stream()
    start = midnight(first)
    read = ReadWindow.of(stream, start, start + days * DAY)
    low, high = read.low, read.high
    root = check_archive_root(stream.archive, archive.data_dir)
    hour, files = low.replace(minute=0, second=0, microsecond=0), []
    while hour < high:
        if hour >= low:
            files += sorted(str(p) for p in (root / hour.strftime(stream.archive.layout)).glob("*.gz"))
        hour += HOUR
    return files


def plan(
    config: BenchConfig, large: Archive | None, small: Archive | None, scale: list[Archive] | None = None
) -> list[Run]:
    runs_dir = config.out / "runs"
    runs: list[Run] = []

    def add(
        variant: str,
        group: str,
        archive: Archive,
        first: date,
        days: int,
        shared: str = "",
        line: str = DEFAULT_LINE,
    ) -> None:
        label = f"{len(runs) + 1:02d}-{variant}-{group}" + (f"-{line}" if line != DEFAULT_LINE else "")
        runs.append(Run(label, variant, group, archive, first, days, runs_dir / (shared or label), line))

    variants = [v for v in config.variants if v != "duckdb" or config.duckdb]
    other = [v for v in config.other_line_variants if v != "duckdb"] if config.other_line else []
    for _ in range(config.repetitions if large is not None else 0):
        for variant in variants:
            add(variant, "compare", large, config.start, config.days)
        for variant in other:
            add(variant, "compare", large, config.start, config.days, line=OTHER_LINE)
    for archive in scale or []:
        for variant in config.scale_variants:
            if variant.endswith("_hourly") and archive.label != "files":
                continue  # a year of hours against a year of days: the many small files only
            add(variant, archive.label, archive, config.start, archive.days)
        if archive.label in ("big", "huge"):
            for variant in (v for v in other if v in config.scale_variants):
                add(variant, archive.label, archive, config.start, archive.days, line=OTHER_LINE)
        if archive.label == "files" and "backfill" in config.scale_variants and config.short_days:
            # The driver's memory over a year against a few days of the same stream.
            add("backfill", "files_short", archive, config.start, config.short_days)
    if small is not None:
        if config.range_days:
            add("backfill", "range", small, config.start, config.range_days)
            for offset in range(config.range_days):
                add("backfill", "daily", small, config.start + timedelta(days=offset), 1, shared="daily")
            if config.range_days > 1:
                # A 1-day refresh in a process whose JVM already ran the day before: the daily runs
                # minus what a fresh process pays (JVM, session, first catalog call, JIT warm-up).
                add("backfill", "warm", small, config.start + DAY, 1)
        if config.short_days and config.long_days:
            add("backfill", "short", small, config.start, config.short_days)
            add("backfill", "long", small, config.start, config.long_days)
    return runs


def _environment(run: Run, python: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BACKFILL_PLATFORM_CATALOG_")}
    env.update(
        {
            settings.DATA_DIR_ENV: str(run.archive.data_dir),
            settings.CATALOG_JDBC_URI_ENV: f"jdbc:sqlite:{run.run_dir}/catalog.db",
            settings.CATALOG_SQL_URI_ENV: f"sqlite:///{run.run_dir}/catalog.db",
            settings.WAREHOUSE_ENV: (run.run_dir / "warehouse").as_uri(),
            "TZ": "UTC",
            "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
            "PYSPARK_PYTHON": python
            if python != sys.executable
            else os.environ.get("PYSPARK_PYTHON", python),
        }
    )
    if os.environ.get(settings.CATALOG_NAME_ENV):
        env[settings.CATALOG_NAME_ENV] = os.environ[settings.CATALOG_NAME_ENV]
    return env


def spark_version(python: str) -> str:
    """The PySpark version of an environment's Python (the line a run measured)."""
    code = "import pyspark; print(pyspark.__version__)"
    return subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def _other_line_baseline_conf(
    python: str, env: dict[str, str], event_log: Path, read_bytes: int
) -> dict[str, str]:
    """`baseline_spark_conf` as another line's environment computes it (its jars and class archive are
    its own): that line's Python is asked."""
    code = (
        "import json, os, sys; from pathlib import Path; "
        "from backfill_platform.devtools.bench.harness import baseline_spark_conf; "
        "print(json.dumps(baseline_spark_conf(dict(os.environ), Path(sys.argv[1]), int(sys.argv[2]))))"
    )
    done = subprocess.run(
        [python, "-c", code, str(event_log), str(read_bytes)], env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"{python} could not compute the baseline's Spark settings:\n{done.stderr[-3000:]}"
        )
    return json.loads(done.stdout.splitlines()[-1])


def baseline_spark_conf(env: dict[str, str], event_log: Path, read_bytes: int) -> dict[str, str]:
    """The Spark settings the platform's own resources give a run with this environment and this much to
    read (its JIT compiler), plus the event log: computed here so that the baseline's process imports
    nothing but PySpark."""
    from backfill_platform.lakehouse.resources import IcebergCatalogResource, spark_from_env

    catalog = IcebergCatalogResource(
        name=env.get(settings.CATALOG_NAME_ENV) or settings.DEFAULT_CATALOG_NAME,
        jdbc_uri=env[settings.CATALOG_JDBC_URI_ENV],
        sql_uri=env[settings.CATALOG_SQL_URI_ENV],
        warehouse=env[settings.WAREHOUSE_ENV],
    )
    return {**spark_from_env(catalog).full_spark_config(read_bytes), **event_log_settings(event_log)}


def execute(run: Run, index: int, python: str = sys.executable, spark: str = "") -> dict:
    """One measured run in a fresh process of `python` (an environment of the Spark line `spark`)."""
    run.run_dir.mkdir(parents=True, exist_ok=True)
    env = _environment(run, python)
    files = window_files(run.archive, run.first, run.days)
    spec = {
        "variant": run.variant,
        "start": run.first.isoformat(),
        "days": run.days,
        "files": files if run.variant in ("baseline", "duckdb") else [],
        "event_log": str(run.run_dir / "eventlog" / str(index)),
        "warm_up_days": 1 if run.group == "warm" else 0,
        "result": str(run.run_dir / f"result-{index}.json"),
    }
    if run.variant == "baseline":
        read_bytes = sum(Path(f).stat().st_size for f in files)
        compute = (
            baseline_spark_conf if run.line == DEFAULT_LINE else partial(_other_line_baseline_conf, python)
        )
        spec["spark_conf"] = compute(env, Path(spec["event_log"]), read_bytes)
    spec_path = run.run_dir / f"spec-{index}.json"
    spec_path.write_text(json.dumps(spec))
    log = run.run_dir / f"output-{index}.log"
    spawned = time.time()
    with log.open("w") as output:
        code = subprocess.call(
            [python, "-m", "backfill_platform.devtools.bench.child", str(spec_path)],
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    exited = time.time()
    if code != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
        raise RuntimeError(f"bench run {run.label} failed (exit {code}); end of {log}:\n{tail}")
    child = json.loads(Path(spec["result"]).read_text())
    hourly_events = f"raw.{STREAM}_hourly_events"
    tables = {
        "baseline": SPARK_TABLE,
        "duckdb": DUCKDB_TABLE,
        "events_hourly": hourly_events,
        "backfill_hourly": hourly_events,
    }
    table = tables.get(run.variant, f"raw.{STREAM}_events")
    catalog_name = settings.env_or(settings.CATALOG_NAME_ENV, settings.DEFAULT_CATALOG_NAME)
    start = midnight(run.first)
    back = read_back(run.run_dir, catalog_name, table, start, start + run.days * DAY)
    figures = (
        spark_figures(Path(spec["event_log"]), back["snapshot_ms"], since_ms=child["job_began"] * 1000)
        if run.variant != "duckdb"
        else {"spark_jobs": None, "jobs_after_events_write": None, "driver_heap_peak_mib": None}
    )
    jobs = spark_jobs(Path(spec["event_log"]), child["job_began"] * 1000) if run.variant != "duckdb" else []
    days = [(run.first + timedelta(days=i)).isoformat() for i in range(run.days)]
    return {
        "label": run.label,
        "variant": run.variant,
        "group": run.group,
        "line": run.line,
        "spark": spark,
        "archive": run.archive.label,
        "first": run.first.isoformat(),
        "days": run.days,
        "wall_s": round(child["job_ended"] - spawned, 3),
        "in_process_s": round(child["job_ended"] - child["job_began"], 3),
        "process_s": round(exited - spawned, 3),
        "rows": back["rows"],
        "expected_rows": sum(run.archive.written.get(day, 0) for day in days),
        **figures,
        "driver_peak_rss_mib": child.get("driver_peak_rss_mib"),
        "process_peak_rss_mib": child.get("process_peak_rss_mib"),
        "driver_live_heap_peak_mib": child.get("driver_live_heap_peak_mib"),
        "jit": child.get("jit"),
        "files": len(files),
        "steps": step_figures(child["steps"], jobs, run.days) if child.get("steps") else {},
        "jobs": jobs,
    }


def run_bench(config: BenchConfig, console: Console | None = None) -> dict:
    console = console or Console(width=160)
    out = config.out
    for stale in ("runs", "archives", "warehouse", "archive"):  # the latter two: the previous bench's
        shutil.rmtree(out / stale, ignore_errors=True)
    for stale in ("catalog.db", "catalog.db-wal", "catalog.db-shm"):
        (out / stale).unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    config = BenchConfig(**{**asdict(config), "duckdb": config.duckdb and duckdb_installed()})
    began = datetime.now(UTC)
    load_before = os.getloadavg()
    console.print(f"bench in {out}: load average {load_before[0]:.2f} on {os.cpu_count()} CPUs")

    step = time.monotonic()
    large = (
        generate(out, "compare", config.start, config.days, config.events_per_day)
        if config.repetitions
        else None
    )
    # One day more than measured: the measured days' read windows end hours after their last day, and
    # a quiet stream's hours there would otherwise hold no file (an unsettled day, refused).
    scale: list[Archive] = []
    if config.scale:
        big = generate(out, "big", config.start, config.big_days + 1, config.big_events_per_day)
        files = generate(
            out,
            "files",
            config.start,
            config.files_days + 1,
            config.files_events_per_day,
            config.files_per_hour,
        )
        scale = [replace(big, days=config.big_days), replace(files, days=config.files_days)]
        if config.huge_copies > 1:
            # (h) how cost grows with size: too big for the generator's memory, so the big day copied.
            huge = multiply(big, out, "huge", config.huge_copies)
            scale.append(replace(huge, days=config.big_days))
    small_days = max(config.range_days, config.long_days if config.short_days else 0)
    small = (
        generate(out, "refresh", config.start, small_days, config.refresh_events_per_day)
        if small_days
        else None
    )
    console.print(f"archives generated in {time.monotonic() - step:.1f} s")

    runs = plan(config, large, small, scale)
    pythons = {DEFAULT_LINE: sys.executable, OTHER_LINE: config.other_line}
    versions = {line: spark_version(python) for line, python in pythons.items() if python}
    console.print(
        "Spark lines: "
        + ", ".join(f"{line} {version} ({pythons[line]})" for line, version in versions.items())
    )
    records: list[dict] = []
    records_file = out / "runs" / "records.json"  # what ran so far, should a later run fail
    for index, run in enumerate(runs, start=1):
        record = execute(run, index, pythons[run.line], versions[run.line])
        records.append(record)
        records_file.write_text(json.dumps(records, indent=2))
        console.print(
            f"[{index}/{len(runs)}] {run.variant:<8} {run.group:<7} {versions[run.line]:<6} {run.first} +{run.days}d: "
            f"{record['wall_s']:6.1f} s wall, {record['in_process_s']:6.1f} s in process, "
            f"{record['spark_jobs'] if record['spark_jobs'] is not None else '-'} Spark jobs, "
            f"{record['rows']:,} rows" + (f", {record['jit']} JIT" if record.get("jit") else "")
        )
    result = {
        "started": began.isoformat(),
        "finished": datetime.now(UTC).isoformat(),
        "machine": {"cpus": os.cpu_count(), "load_before": load_before, "load_after": os.getloadavg()},
        "spark": versions,
        "config": {**asdict(config), "start": config.start.isoformat(), "out": str(out)},
        "archives": {
            a.label: {"days": a.days, "events_per_day": a.events_per_day, **a.totals, "written": a.written}
            for a in (large, small, *scale)
            if a is not None
        },
        "runs": records,
    }
    result.update(summarize(result, config))
    (out / RESULT_FILE).write_text(json.dumps(result, indent=2, default=str))
    print_report(result, config, console)
    console.print(f"saved {out / RESULT_FILE}")
    return result
