"""`make bench` on tiny sizes: the harness runs end to end and its saved result is complete and honest.

Speed targets are the bench's report, never asserted here; what is asserted is that each variant ran
in its own process, Spark jobs and driver memory were measured, and the bare-Spark baseline and the
platform wrote the same events (read back from their tables).
"""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from backfill_platform.devtools.bench.harness import RESULT_FILE, BenchConfig, duckdb_installed, run_bench


def test_bench_smoke(tmp_path: Path) -> None:
    # The validated backfill is left out to keep the test short: it runs the same events step first.
    config = BenchConfig(
        days=1,
        events_per_day=500,
        repetitions=1,
        range_days=0,
        short_days=0,
        variants=("baseline", "events", "duckdb"),
        out=tmp_path / "bench",
    )
    with (tmp_path / "report.txt").open("w") as report:
        run_bench(config, Console(file=report, width=160))

    result = json.loads((tmp_path / "bench" / RESULT_FILE).read_text())
    expected = {"baseline", "events"} | ({"duckdb"} if duckdb_installed() else set())
    assert {r["variant"] for r in result["runs"]} == expected
    assert set(result["variants"]) == expected
    for run in result["runs"]:
        assert run["wall_s"] >= run["in_process_s"] > 0
        if run["variant"] != "duckdb":
            assert run["spark_jobs"] > 0 and run["driver_peak_rss_mib"] > 0
    platform = next(r for r in result["runs"] if r["variant"] == "events")
    assert 0 < platform["jobs_after_events_write"] < platform["spark_jobs"]

    rows = {r["variant"]: r["rows"] for r in result["runs"]}
    assert rows["baseline"] == rows["events"] == platform["expected_rows"] > 0
    assert rows.get("duckdb", rows["baseline"]) == rows["baseline"]
    assert result["rows_equal"] is True
    assert result["variants"]["baseline"]["ratio_wall"] == 1.0
    targets = {t["target"]: t for t in result["targets"]}
    assert len(targets) == 7 and all("goal" in t and "pass" in t for t in targets.values())
    printed = (tmp_path / "report.txt").read_text()
    assert "targets" in printed and ("PASS" in printed or "MISS" in printed)
