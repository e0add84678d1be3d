"""Medians, ratios, the marginal cost of a day, the targets with PASS/MISS, and the tables printed.

Ratios use each run's wall time from process start to the end of its job (interpreter, imports, JVM
start included, as a user's run); *in process* is the job itself (for the platform the Dagster run,
Spark session start included). The targets are reported, never asserted.
"""

from __future__ import annotations

from statistics import median
from typing import TYPE_CHECKING, Any

from rich.table import Table

from backfill_platform.devtools.bench.config import DEFAULT_LINE, OTHER_LINE, BenchConfig
from backfill_platform.devtools.bench.measure import jobs_busy_seconds

if TYPE_CHECKING:
    from rich.console import Console

NAMES = {
    "baseline": "(a) bare Spark",
    "events": "(b) events step",
    "backfill": "(c) validated backfill",
    "duckdb": "(e) DuckDB",
    "events_hourly": "(b) events step, by hour",
    "backfill_hourly": "(c) validated backfill, by hour",
}


def _median(runs: list[dict], key: str) -> float | None:
    values = [r[key] for r in runs if r.get(key) is not None]
    return round(median(values), 3) if values else None


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None


def _slope(points: list[tuple[int, float]]) -> float | None:
    """Least-squares seconds per extra day over runs of different lengths."""
    if len({d for d, _ in points}) < 2:
        return None
    mean_d = sum(d for d, _ in points) / len(points)
    mean_s = sum(s for _, s in points) / len(points)
    num = sum((d - mean_d) * (s - mean_s) for d, s in points)
    return round(num / sum((d - mean_d) ** 2 for d, _ in points), 3)


def _on_line(runs: list[dict], line: str) -> list[dict]:
    return [r for r in runs if r.get("line", DEFAULT_LINE) == line]


def summarize(result: dict, config: BenchConfig) -> dict[str, Any]:
    every_line = result["runs"]
    runs = _on_line(every_line, DEFAULT_LINE)
    groups = ("compare", "range", "daily", "warm", "short", "long")
    group = {g: [r for r in runs if r["group"] == g] for g in groups}
    compare = group["compare"]
    everywhere = _of(every_line, "compare")
    summary: dict[str, Any] = {
        "variants": _compare_variants(compare),
        "rows_equal": (
            len({r["rows"] for r in everywhere}) == 1
            and all(r["rows"] == r["expected_rows"] for r in everywhere)
        )
        if everywhere
        else None,
    }
    other = _on_line(every_line, OTHER_LINE)
    if other:
        summary["other_line"] = {
            "spark": other[0].get("spark"),
            "variants": _compare_variants(_of(other, "compare")),
            "scale": {g: _scale_case(group_runs) for g in SCALE_CASES if (group_runs := _of(other, g))},
        }
    _summarize_ranges(summary, group)
    _summarize_scale(summary, runs)
    cpus = result.get("machine", {}).get("cpus") or 1
    summary["growth"] = {
        line: _growth(_on_line(every_line, line), cpus) for line in (DEFAULT_LINE, OTHER_LINE)
    }
    summary["targets"] = _targets(summary, config)
    return summary


def _compare_variants(compare: list[dict]) -> dict[str, dict[str, Any]]:
    """Each variant of the comparison on one Spark line: medians, and ratios to that line's bare Spark."""
    base_wall = _median([r for r in compare if r["variant"] == "baseline"], "wall_s")
    base_in = _median([r for r in compare if r["variant"] == "baseline"], "in_process_s")
    variants = {}
    for variant in NAMES:
        mine = [r for r in compare if r["variant"] == variant]
        if not mine:
            continue
        wall = _median(mine, "wall_s")
        # The run whose jobs are shown: the median's (of an even count, the upper of the middle two).
        median_run = sorted(mine, key=lambda r: r["wall_s"])[len(mine) // 2]
        variants[variant] = {
            "runs": len(mine),
            "median_wall_s": wall,
            "median_in_process_s": _median(mine, "in_process_s"),
            "ratio_wall": _ratio(wall, base_wall),
            "ratio_in_process": _ratio(_median(mine, "in_process_s"), base_in),
            "events_per_s": round(mine[0]["rows"] / wall) if wall else None,
            "spark_jobs": _median(mine, "spark_jobs"),
            "jobs_after_events_write": _median(mine, "jobs_after_events_write"),
            "driver_peak_rss_mib": _median(mine, "driver_peak_rss_mib"),
            "rows": sorted({r["rows"] for r in mine}),
            # Where the median run's time went: its Spark jobs (`measure.spark_jobs`).
            "jobs": median_run.get("jobs", []),
            "jobs_in_process_s": median_run["in_process_s"],
        }
    return variants


def _summarize_ranges(summary: dict[str, Any], group: dict[str, list[dict]]) -> None:
    """(d): one run of a range against its one-day runs, the warm refresh, the marginal day, memory."""
    daily, one_run = group["daily"], group["range"]
    if daily and one_run:
        total = round(sum(r["wall_s"] for r in daily), 3)
        summary["range"] = {
            "days": one_run[0]["days"],
            "one_run_wall_s": one_run[0]["wall_s"],
            "one_day_runs_wall_s": total,
            "one_day_runs_over_one_run": _ratio(total, one_run[0]["wall_s"]),
            # the range's run against the first (cold, like it) one-day run, per extra day, in process
            "marginal_s_per_day_one_to_range": _ratio(
                one_run[0]["in_process_s"] - daily[0]["in_process_s"], max(one_run[0]["days"] - 1, 1)
            ),
            "refresh_median_in_process_s": _median(daily, "in_process_s"),
            "refresh_median_jobs_after_events_write": _median(daily, "jobs_after_events_write"),
            "refresh_max_jobs_after_events_write": max(
                (r["jobs_after_events_write"] or 0 for r in daily), default=None
            ),
        }
    if group["warm"]:
        warm = group["warm"][0]
        summary["warm_refresh"] = {
            "in_process_s": warm["in_process_s"],
            "spark_jobs": warm["spark_jobs"],
            "jobs_after_events_write": warm["jobs_after_events_write"],
        }
    # Cold validated backfills on the refresh archive, by length: one-day (the daily sequence's first),
    # short, the range, long.
    cold = [*daily[:1], *group["short"], *one_run, *group["long"]]
    summary["marginal_s_per_day"] = _slope([(r["days"], r["in_process_s"]) for r in cold])
    if group["short"] and group["long"]:
        short, long = group["short"][0], group["long"][0]
        summary["memory"] = {
            "short_days": short["days"],
            "long_days": long["days"],
            "short_peak_rss_mib": short["driver_peak_rss_mib"],
            "long_peak_rss_mib": long["driver_peak_rss_mib"],
            "long_over_short": _ratio(long["driver_peak_rss_mib"], short["driver_peak_rss_mib"]),
        }


def _summarize_scale(summary: dict[str, Any], runs: list[dict]) -> None:
    """(f) and (g) on the default line, the year's driver time per extra day and its live heap."""
    summary["scale"] = {g: _scale_case(group_runs) for g in SCALE_CASES if (group_runs := _of(runs, g))}
    year = [r for r in _of(runs, "files") if r["variant"] == "backfill"]
    if year and _of(runs, "files_short"):
        short = _of(runs, "files_short")[0]
        # Per extra day: the year's driver time outside Spark jobs against the short range's, per step,
        # so that what every run pays once (session, planning, first catalog calls) is not spread over it.
        long_steps, short_steps = _steps_by_kind(year[0]), _steps_by_kind(short)
        summary["scale"]["files"]["marginal_driver_ms_per_day"] = {
            kind: round(1000 * (figures["driver_s"] - short_steps[kind]["driver_s"]) / (year[0]["days"] - short["days"]), 1)
            for kind, figures in long_steps.items()
            if kind in short_steps and year[0]["days"] > short["days"]
        }  # fmt: skip
        summary["scale_memory"] = {
            "long_days": year[0]["days"],
            "short_days": short["days"],
            "long_live_heap_mib": year[0]["driver_live_heap_peak_mib"],
            "short_live_heap_mib": short["driver_live_heap_peak_mib"],
            "long_over_short": _ratio(
                year[0]["driver_live_heap_peak_mib"], short["driver_live_heap_peak_mib"]
            ),
        }


SCALE_CASES = {"big": "(f) big day", "files": "(g) many small files", "huge": "(h) copies of the big day"}
# How cost grows: the same stream at three sizes (the comparison, the big day, copies of the big day).
GROWTH_CASES = {"compare": "(a)-(c), the comparison", "big": SCALE_CASES["big"], "huge": SCALE_CASES["huge"]}
STEP_KINDS = (("events", "events"), ("shadow", "shadow__"), ("production", "production"))


def _growth(runs: list[dict], cpus: int) -> list[dict[str, Any]]:
    """Each size of the same stream on one line: bare Spark's wall, the events step's and the validated
    backfill's walls and ratios, and events per second per core: the events step's over its Dagster
    step's seconds (the run's start-up not counted against it), bare Spark's over its wall. Medians
    where a size ran more than once."""
    rows = []
    for group in GROWTH_CASES:
        mine = _of(runs, group)
        by = {v: [r for r in mine if r["variant"] == v] for v in ("baseline", "events", "backfill")}
        if not by["baseline"] or not (by["events"] or by["backfill"]):
            continue
        base = _median(by["baseline"], "wall_s")
        step_s = [s["events"]["seconds"] for r in by["events"] if (s := _steps_by_kind(r)).get("events")]
        events = (by["events"] or by["backfill"])[0]["expected_rows"]
        rows.append({
            "case": group,
            "events": events,
            "bare_s": base,
            "events_s": _median(by["events"], "wall_s"),
            "events_ratio": _ratio(_median(by["events"], "wall_s"), base),
            "backfill_s": _median(by["backfill"], "wall_s"),
            "backfill_ratio": _ratio(_median(by["backfill"], "wall_s"), base),
            "events_step_s": round(median(step_s), 3) if step_s else None,
            "events_per_s_per_core": round(events / median(step_s) / cpus) if step_s else None,
            "bare_events_per_s_per_core": round(events / base / cpus) if base else None,
        })  # fmt: skip
    return rows


def _growth_table(title: str, rows: list[dict[str, Any]]) -> Table:
    table = Table(title=title)
    for column in ("case", "events", "bare Spark s", "events step s", "x bare", "validated backfill s",
                   "x bare", "events step: events/s per core", "bare Spark: events/s per core"):  # fmt: skip
        table.add_column(column, justify="left" if column == "case" else "right")
    for row in rows:
        table.add_row(
            GROWTH_CASES[row["case"]], _fmt(row["events"]), _fmt(row["bare_s"]), _fmt(row["events_s"]),
            _fmt(row["events_ratio"], 2, "x"), _fmt(row["backfill_s"]), _fmt(row["backfill_ratio"], 2, "x"),
            _fmt(row["events_per_s_per_core"]), _fmt(row["bare_events_per_s_per_core"]),
        )  # fmt: skip
    return table


def _of(runs: list[dict], group: str) -> list[dict]:
    return [r for r in runs if r["group"] == group]


def _step_kind(step_key: str) -> str:
    return next((kind for kind, marker in STEP_KINDS if marker in step_key), "other")


def _steps_by_kind(run: dict) -> dict[str, dict[str, float]]:
    """A platform run's step figures as events / shadow / production (checks run inside their step)."""
    steps: dict[str, dict[str, float]] = {}
    for key, figures in run.get("steps", {}).items():
        kind = steps.setdefault(_step_kind(key), {"seconds": 0.0, "driver_s": 0.0})
        kind["seconds"] += figures["seconds"]
        kind["driver_s"] += figures["driver_s"]
    for figures in steps.values():
        partitions = run["days"] * (24 if run["variant"].endswith("_hourly") else 1)
        figures["driver_ms_per_partition"] = round(1000 * figures["driver_s"] / partitions, 1)
    return steps


def _scale_case(runs: list[dict]) -> dict[str, Any]:
    """One scale case: each variant's wall time and ratio to bare Spark, the platform's steps."""
    base = _median([r for r in runs if r["variant"] == "baseline"], "wall_s")
    case: dict[str, Any] = {"days": runs[0]["days"], "files": runs[0]["files"], "variants": {}}
    for variant in NAMES:
        mine = [r for r in runs if r["variant"] == variant]
        if not mine:
            continue
        wall = _median(mine, "wall_s")
        steps = _steps_by_kind(mine[0])
        events_s = steps.get("events", {}).get("seconds")
        case["variants"][variant] = {
            "wall_s": wall,
            "ratio_wall": _ratio(wall, base),
            "rows": mine[0]["rows"],
            "rows_equal": mine[0]["rows"] == mine[0]["expected_rows"],
            "events_per_s": round(mine[0]["rows"] / (events_s or wall)) if wall else None,
            "files_per_s": round(case["files"] / (events_s or wall), 1) if wall else None,
            "live_heap_mib": mine[0].get("driver_live_heap_peak_mib"),
            "steps": steps,
            "jobs": mine[0].get("jobs", []),
            "jobs_in_process_s": mine[0]["in_process_s"],
        }
    return case


# The validated backfill against bare Spark on the same archive, and the events step alone (#35's goals).
VALIDATED_GOAL, EVENTS_GOAL = 1.5, 1.3


def _targets(summary: dict, config: BenchConfig) -> list[dict]:
    v, rng, mem = summary["variants"], summary.get("range", {}), summary.get("memory", {})
    warm = summary.get("warm_refresh", {})
    size = f"{config.days} x {config.events_per_day:,}"
    refresh = f"1-day x {config.refresh_events_per_day:,}"
    other = summary.get("other_line")
    lines = [("", v), *([(f", Spark {other['spark']}", other["variants"])] if other else [])]
    rows = [
        row
        for line, variants in lines
        for row in (
            (
                f"validated backfill / bare Spark ({size}, wall){line}",
                f"≤ {VALIDATED_GOAL}x",
                variants.get("backfill", {}).get("ratio_wall"),
                VALIDATED_GOAL,
            ),
            (
                f"events step / bare Spark ({size}, wall){line}",
                f"≤ {EVENTS_GOAL}x",
                variants.get("events", {}).get("ratio_wall"),
                EVENTS_GOAL,
            ),
        )
    ]
    rows += [
        (f"{refresh} validated refresh, in process (median)", "≤ 15 s", rng.get("refresh_median_in_process_s"), 15),
        (f"{refresh} refresh: Spark jobs after the events write (median)", "≤ 25", rng.get("refresh_median_jobs_after_events_write"), 25),
        (f"{refresh} refresh in a process that ran the day before (warm JVM)", "≤ 15 s", warm.get("in_process_s"), 15),
        (f"marginal cost per extra day in one run ({config.refresh_events_per_day:,}/day)", "≤ 1 s", summary.get("marginal_s_per_day"), 1.0),
        (f"driver JVM peak RSS, {mem.get('long_days', config.long_days)}-day / {mem.get('short_days', config.short_days)}-day range", "≤ 1.2x", mem.get("long_over_short"), 1.2),
    ]  # fmt: skip
    big_lines = [
        ("big", "", summary.get("scale", {}).get("big")),
        ("huge", "", summary.get("scale", {}).get("huge")),
    ]
    for group in ("big", "huge"):
        if other and other["scale"].get(group):
            big_lines.append((group, f", Spark {other['spark']}", other["scale"][group]))
    for group, line, case in big_lines:
        if case is None:
            continue
        label = f"{SCALE_CASES[group]} ({case['days']} d, {case['files']:,} files)"
        platform = case["variants"]
        rows.append((f"{label}: validated backfill / bare Spark (wall){line}", f"≤ {VALIDATED_GOAL}x", platform.get("backfill", {}).get("ratio_wall"), VALIDATED_GOAL))  # fmt: skip
        rows.append((f"{label}: events step / bare Spark (wall){line}", f"≤ {EVENTS_GOAL}x", platform.get("events", {}).get("ratio_wall"), EVENTS_GOAL))  # fmt: skip
    case = summary.get("scale", {}).get("files")
    if case is not None:
        label = f"{SCALE_CASES['files']} ({case['days']} d, {case['files']:,} files)"
        platform = case["variants"]
        rows.append((f"{label}: validated backfill / bare Spark (wall)", "≤ 1.0x", platform.get("backfill", {}).get("ratio_wall"), 1.0))  # fmt: skip
        steps = platform.get("backfill", {}).get("steps", {})
        worst = max((f["driver_ms_per_partition"] for f in steps.values()), default=None)
        rows.append((f"{label}: driver time outside Spark jobs / days, ms (worst step)", "≤ 20", worst, 20))  # fmt: skip
        marginal = case.get("marginal_driver_ms_per_day", {})
        worst = max(marginal.values(), default=None)
        rows.append((f"{label}: the same per extra day over the short range, ms (worst step)", "≤ 20", worst, 20))  # fmt: skip
        for hourly_variant, daily_variant, what in (
            ("events_hourly", "events", "events"),
            ("backfill_hourly", "backfill", "validated backfill"),
        ):
            hourly = platform.get(hourly_variant)
            if not hourly:
                continue
            hours = case["days"] * 24
            worst = max((f["driver_ms_per_partition"] for f in hourly["steps"].values()), default=None)
            rows.append((f"{label}: {what} by hour ({hours:,} partitions), driver time outside Spark jobs / hours, ms (worst step)", "≤ 20", worst, 20))  # fmt: skip
            by_day = platform.get(daily_variant, {}).get("wall_s")
            ratio = round(hourly["wall_s"] / by_day, 2) if by_day and hourly.get("wall_s") else None
            rows.append((f"{label}: {what} by hour / by day (wall)", "-", ratio, float("inf")))  # fmt: skip
        memory = summary.get("scale_memory", {})
        if memory:
            days = f"{memory['long_days']}-day / {memory['short_days']}-day"
            rows.append((f"{label}: driver live heap after GC, {days} backfill", "≤ 1.2x", memory["long_over_short"], 1.2))  # fmt: skip
    return [
        {"target": name, "goal": goal, "measured": value, "pass": None if value is None else value <= limit}
        for name, goal, value, limit in rows
    ]


def _fmt(value: Any, digits: int = 1, suffix: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}{suffix}"
    return f"{value:,}{suffix}"


def _compare_table(title: str, variants: dict[str, dict[str, Any]]) -> Table:
    table = Table(title=title)
    for column in ("variant", "runs", "wall s", "in process s", "x bare Spark (wall)", "x (in process)",
                   "events/s (wall)", "Spark jobs", "jobs after events write", "driver peak RSS MiB", "rows"):  # fmt: skip
        table.add_column(column, justify="left" if column == "variant" else "right")
    for variant, s in variants.items():
        table.add_row(
            NAMES[variant], str(s["runs"]), _fmt(s["median_wall_s"]), _fmt(s["median_in_process_s"]),
            _fmt(s["ratio_wall"], 2, "x"), _fmt(s["ratio_in_process"], 2, "x"), _fmt(s["events_per_s"]),
            _fmt(s["spark_jobs"], 0), _fmt(s["jobs_after_events_write"], 0), _fmt(s["driver_peak_rss_mib"], 0),
            " / ".join(f"{n:,}" for n in s["rows"]),
        )  # fmt: skip
    return table


# Jobs of at least this many seconds are shown one by one in "where the time goes"; shorter ones summed.
JOB_SHOWN_FROM_S = 0.5


def _jobs_table(title: str, variants: dict[str, dict[str, Any]]) -> Table:
    """Each variant's Spark jobs (`measure.spark_jobs`), in the order they ran: the longer ones one by one
    (what submitted each), the short ones summed; then the time of the run no job was running."""
    table = Table(title=title)
    for column in ("variant", "job", "submitted by", "wall s", "tasks", "task s", "task CPU s"):
        table.add_column(column, justify="left" if column in ("variant", "submitted by") else "right")
    for variant, figures in variants.items():
        jobs = figures.get("jobs") or []
        long = [job for job in jobs if job["seconds"] >= JOB_SHOWN_FROM_S]
        short = [job for job in jobs if job["seconds"] < JOB_SHOWN_FROM_S]
        for index, job in enumerate(long):
            table.add_row(
                NAMES[variant] if index == 0 else "", str(job["job"]), job["label"][:70], _fmt(job["seconds"]),
                str(job["tasks"]), _fmt(job["task_s"]), _fmt(job["cpu_s"]),
            )  # fmt: skip
        if short:
            table.add_row(
                "" if long else NAMES[variant], "", f"{len(short)} shorter jobs", _fmt(sum(j["seconds"] for j in short)),
                str(sum(j["tasks"] for j in short)), _fmt(sum(j["task_s"] for j in short)),
                _fmt(sum(j["cpu_s"] for j in short)),
            )  # fmt: skip
        if jobs:
            idle = figures["jobs_in_process_s"] - jobs_busy_seconds(jobs)
            table.add_row("", "", "no Spark job running (in process)", _fmt(idle), "", "", "")
    return table


def print_report(result: dict, config: BenchConfig, console: Console) -> None:
    archive = result["archives"].get("compare", {"lines": 0})
    spark = result.get("spark", {})
    size = (
        f"{config.days} days x {config.events_per_day:,} events ({archive['lines']:,} archive lines), "
        f"medians of {config.repetitions} interleaved runs"
    )
    lines = [(spark.get(DEFAULT_LINE, ""), result["variants"])]
    if "other_line" in result:
        lines.append((result["other_line"]["spark"], result["other_line"]["variants"]))
    for version, variants in lines:
        if variants:
            console.print(_compare_table(f"(a)-(c), (e) on Spark {version}: {size}", variants))
            console.print(_jobs_table(f"where the median run's time goes, Spark {version}: {size}", variants))
    if result["variants"]:
        console.print(f"rows equal across variants and to the generator's truth: {result['rows_equal']}")

    ranges = Table(title=f"(d) and memory: validated backfill, {config.refresh_events_per_day:,} events/day")
    for column in ("runs", "days", "wall s", "in process s", "Spark jobs", "jobs after events write",
                   "driver peak RSS MiB", "driver peak heap MiB", "live heap after GC MiB"):  # fmt: skip
        ranges.add_column(column, justify="left" if column == "runs" else "right")
    names = {
        "range": "one run of the range",
        "daily": "one-day run",
        "warm": "one-day run, warm process,",
        "short": "short range",
        "long": "long range",
        "files_short": "(g) short range",
    }
    for r in result["runs"]:
        if r["group"] in names:
            ranges.add_row(
                f"{names[r['group']]} from {r['first']}", str(r["days"]), _fmt(r["wall_s"]),
                _fmt(r["in_process_s"]), _fmt(r["spark_jobs"]), _fmt(r["jobs_after_events_write"]),
                _fmt(r["driver_peak_rss_mib"], 0), _fmt(r["driver_heap_peak_mib"], 0),
                _fmt(r.get("driver_live_heap_peak_mib"), 0),
            )  # fmt: skip
    if ranges.row_count:
        console.print(ranges)
    if "range" in result:
        d = result["range"]
        console.print(
            f"{d['days']} one-day runs: {d['one_day_runs_wall_s']:.1f} s wall against {d['one_run_wall_s']:.1f} s "
            f"for one {d['days']}-day run ({d['one_day_runs_over_one_run']:.2f}x); that run against the first "
            f"one-day run: {_fmt(d['marginal_s_per_day_one_to_range'], 2)} s per extra day in process"
        )
    console.print(f"marginal seconds per extra day (in process, least squares over the cold runs): "
                  f"{_fmt(result['marginal_s_per_day'], 2)}")  # fmt: skip

    cases = [(spark.get(DEFAULT_LINE, ""), group, case) for group, case in result.get("scale", {}).items()]
    cases += [
        (result["other_line"]["spark"], g, c)
        for g, c in result.get("other_line", {}).get("scale", {}).items()
    ]
    for version, group, case in cases:
        about = f"{SCALE_CASES[group]} on Spark {version}: {case['days']} days, {case['files']:,} files in the window"
        scale = Table(title=f"{about}, one run each")
        for column in ("variant", "wall s", "x bare Spark", "events s", "shadow s", "production s",
                       "events/s", "files/s", "driver ms/day (events, shadow, prod)", "live heap MiB", "rows",
                       "= truth"):  # fmt: skip
            scale.add_column(column, justify="left" if column == "variant" else "right")
        for variant, v in case["variants"].items():
            steps = v["steps"]
            step = [steps.get(kind, {}) for kind, _ in STEP_KINDS]
            scale.add_row(
                NAMES[variant], _fmt(v["wall_s"]), _fmt(v["ratio_wall"], 2, "x"),
                *(_fmt(s.get("seconds")) for s in step), _fmt(v["events_per_s"], 0), _fmt(v["files_per_s"]),
                " / ".join(_fmt(s.get("driver_ms_per_partition"), 0) for s in step) if steps else "-",
                _fmt(v["live_heap_mib"], 0), _fmt(v["rows"]), str(v["rows_equal"]),
            )  # fmt: skip
        console.print(scale)
        console.print(_jobs_table(f"where the time goes, {about}", case["variants"]))
        if case.get("marginal_driver_ms_per_day"):
            marginal = ", ".join(
                f"{kind} {ms:,.1f}" for kind, ms in case["marginal_driver_ms_per_day"].items()
            )
            console.print(
                f"driver time outside Spark jobs per extra day (year against short range), ms: {marginal}"
            )

    for line, rows in result.get("growth", {}).items():
        if len(rows) > 1:
            version = spark.get(line, "")
            console.print(_growth_table(f"how cost grows with size, Spark {version} (each run's wall)", rows))

    targets = Table(title="targets (reported, not asserted)")
    for column in ("target", "goal", "measured", ""):
        targets.add_column(column, justify="left" if column == "target" else "right")
    for t in result["targets"]:
        verdict = {True: "[green]PASS[/green]", False: "[red]MISS[/red]", None: "not run"}[t["pass"]]
        targets.add_row(t["target"], t["goal"], _fmt(t["measured"], 2), verdict)
    console.print(targets)
    machine = result["machine"]
    console.print(
        f"load average {machine['load_before'][0]:.2f} before, {machine['load_after'][0]:.2f} after, "
        f"on {machine['cpus']} CPUs: ratios on a loaded machine are noisy"
    )
