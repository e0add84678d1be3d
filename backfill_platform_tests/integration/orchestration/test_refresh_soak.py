"""Soak: the daily refresh over six simulated days of a live stream, with chaos, converges unattended.

What the daemon does, tick by tick, with an injectable clock: each tick advances simulated time by an
hour, delivers the archive files of the hour that just ended, evaluates the project's automation
conditions at that time (`evaluate_automation_conditions`, what the `daily_refresh` sensor calls) and
executes every run it requests with the real assets (Spark, Iceberg, ledger, gate) on an in-memory
Dagster instance. The platform's clock (`settings.now`, read by the archive observation and the `settled`
check) is the simulated one.

Chaos, seeded: late files for days already promoted (one of them written while the run of its day is
in flight: after its listing, before its commit), a burst of redelivered files, one ingestion hour that
arrives a day late, and crashes at the platform's failpoints (the run dies there as under SIGKILL:
Dagster records an unexpected termination, and what was committed before stays committed).

After the last file, within a bounded number of ticks and with nobody acting: production equals the
truth computed independently from the archive (the generator's accounting rules, per day and hour), the
ledger agrees with production's history, every day's status is `promoted`, no run is left running, and
the number of runs is bounded. `SOAK_DEBUG=1` logs production's automation evaluation, condition by
condition, for every day whose shadow is newer than its production (printed with `pytest -s`).
"""

from __future__ import annotations

import os
from datetime import date, timedelta
from pathlib import Path

import pytest
from dagster import AssetRecordsFilter
from pyspark.sql import functions as F

import backfill_platform.pipeline.events.assets as events_assets
from backfill_platform import faults, settings
from backfill_platform.components.registry import demo_spec_data, project_definitions
from backfill_platform.devtools.generator.playback import GeneratorConfig
from backfill_platform.lakehouse.resources import open_catalog
from backfill_platform.lakehouse.tables import PROD_NAMESPACE, table_id
from backfill_platform.operations.status import dataset_status
from backfill_platform.pipeline.ledger.reconcile import reconcile_ledger
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.grain import DAILY
from backfill_platform_tests.support.projects import load_project, write_project
from backfill_platform_tests.support.soak import (
    HOUR,
    LAYOUT,
    Soak,
    at,
    interrupt_instead_of_kill,
    soak_world,
    truth,
)

pytestmark = [pytest.mark.timeout(1500), pytest.mark.long_running(minutes=6)]

STREAM, DATASET = "playback_soak", "views_soak"
D0 = date(2026, 6, 1)
DAYS = 6
EVENTS_PER_DAY = 300
SEED = 5
TICK = 2 * HOUR  # the daemon's ticks, in simulated time
TICKS_PER_DAY = 12
# Ticks without a run (16 h) after which the refresh is quiet: the last day settles after its lateness
# (8 h) + 1 h, then its chain runs.
DRAIN_TICKS = 8
# The bound on runs (observations aside): three per generated day (its first chain: events, shadow,
# production), and three per chaos event (the chain it re-runs: 4 late files, 3 crashes, the redelivery
# burst, the late hour), plus the late hour's day failing once before it arrives. Measured: 28.
MAX_RUNS = 3 * (DAYS + 1) + 3 * (4 + 3 + 2) + 1
# After the last file arrives: its day settles (lateness 8 h + 1 h), then one chain. Measured: 7.
MAX_TICKS_TO_CONVERGE = TICKS_PER_DAY


def explain(s: Soak) -> None:
    """Log production's last evaluation for the days whose shadow is newer than production."""
    definitions = s.definitions
    for res in s.last_evaluation.results:
        if res.key.path[0] != "prod":
            continue
        parent = next(iter(definitions.resolve_asset_graph().get(res.key).parent_keys))
        for i in range(DAYS):
            day = (D0 + timedelta(days=i)).isoformat()

            def latest(key, day=day):
                r = s.instance.fetch_materializations(
                    AssetRecordsFilter(asset_key=key, asset_partitions=[day]), limit=1
                ).records
                return r[0].timestamp if r else 0

            if latest(parent) > latest(res.key):

                def walk(node, depth=0, day=day):
                    keys = node.true_subset.expensively_compute_partition_keys()
                    s.log.append(
                        "  " * depth + f"{node.condition.get_label() or node.condition.name}: {day in keys}"
                    )
                    for child in node.child_results:
                        walk(child, depth + 1)

                s.log.append(f"{s.clock:%m-%d %H:%M} production {day} behind its shadow:")
                walk(res)


@pytest.fixture(scope="module")
def soak(data_dir: Path, spark_resource, catalog, tmp_path_factory: pytest.TempPathFactory):
    stream = demo_spec_data("playback")
    stream.update(
        name=STREAM,
        first_partition=D0.isoformat(),
        archive_observation_cron="0 */2 * * *",
        refresh_horizon="10d",
    )
    stream["archive"]["location"] = f"archive/{STREAM}"
    dataset = demo_spec_data("views_per_title")
    dataset.update(name=DATASET, source_stream=STREAM)
    # A team's project holding the renamed stream and dataset, loaded as its code location loads it.
    project = write_project(tmp_path_factory.mktemp("soak_project"), [stream, dataset])
    spec, definitions = load_project(project).streams[STREAM], project_definitions(project)

    generated = GeneratorConfig(start=D0, days=DAYS + 1, events_per_day=EVENTS_PER_DAY, seed=SEED)
    with soak_world(
        spec,
        definitions,
        data_dir / "archive" / STREAM,
        tmp_path_factory.mktemp("soak_staged"),
        generated,
        quiet_until=at(D0 + timedelta(days=DAYS + 1)),
        resources={"spark": spark_resource, "catalog": catalog},
    ) as soak:
        yield soak


@pytest.fixture(scope="module")
def converged(soak: Soak, monkeypatch_module):
    """Run the soak to the end; return the tick at which the last file arrived and the last run launched."""
    s = soak
    monkeypatch_module.setattr(settings, "now", lambda: s.clock)
    monkeypatch_module.setattr(faults, "die", interrupt_instead_of_kill)
    real_ingest = events_assets.ingest_window

    def ingest_then_maybe_a_late_file(*args, **kwargs):
        result = real_ingest(*args, **kwargs)  # listed and committed, not yet reported
        if s.late_in_flight is not None:
            s.late_file(*s.late_in_flight)
            s.log[-1] += " while its run was in flight"
            s.late_in_flight = None
        return result

    monkeypatch_module.setattr(events_assets, "ingest_window", ingest_then_maybe_a_late_file)

    # Chaos, seeded: which ticks and runs.
    missing_hour = at(D0 + timedelta(days=2), 10)
    for path in (s.staged / missing_hour.strftime(LAYOUT)).glob("*.jsonl.gz"):
        s.held[path] = missing_hour + timedelta(hours=30)  # arrives a day late
    failpoints = [
        (faults.EVENTS_BEFORE_QUARANTINE, "raw"),
        (faults.SHADOW_BEFORE_CHECKS, "shadow"),
        (faults.PROMOTION_BEFORE_LEDGER, "prod"),
    ]
    s.crashes = [(s.rng.randrange(3, 25), name, namespace) for name, namespace in failpoints]
    late_ticks = sorted(s.rng.sample(range(5 * TICKS_PER_DAY // 2, DAYS * TICKS_PER_DAY), 3))
    burst_tick = s.rng.randrange(2 * TICKS_PER_DAY, (DAYS - 1) * TICKS_PER_DAY)
    in_flight_tick = s.rng.randrange(3 * TICKS_PER_DAY, (DAYS - 1) * TICKS_PER_DAY)

    last_file = s.last_arrival()
    last_run_tick = last_file_tick = 0
    while s.clock < last_file or s.ticks - last_run_tick < DRAIN_TICKS:
        if s.clock < last_file:
            last_file_tick = s.ticks + 1
        tick = s.ticks + 1
        if tick in late_ticks:
            settled_days = [
                d for d in (D0 + timedelta(days=i) for i in range(DAYS)) if at(d, 24 + 9) < s.clock
            ]
            if settled_days:
                day = s.rng.choice(settled_days)
                s.late_file(at(day, 23), at(day, 24 + s.rng.randrange(0, 7)))
        if tick == burst_tick:
            s.redeliver((s.clock - 6 * HOUR).replace(minute=0), 3)
        if tick == in_flight_tick:
            day = (s.clock - timedelta(days=2)).date()
            s.late_in_flight = (at(day, 23), at(day, 24 + 3))
        launched = s.tick(TICK, (lambda: explain(s)) if os.environ.get("SOAK_DEBUG") else None)
        if any(outcome != "observe" for outcome in launched):
            last_run_tick = s.ticks
        assert s.ticks < TICKS_PER_DAY * (DAYS + 1) + 6 * DRAIN_TICKS, (
            "the refresh never went quiet:\n" + "\n".join(s.log)
        )
    print("\n[soak] " + "\n[soak] ".join(s.log))
    s.converged_after = last_run_tick - last_file_tick
    print(
        f"[soak] {s.ticks} ticks of {TICK}; runs {dict(s.runs)}; last file at tick {last_file_tick}, last run "
        f"at tick {last_run_tick} ({s.converged_after} ticks later), then quiet for {s.ticks - last_run_tick}"
    )
    return s


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def test_production_equals_the_truth_of_the_archive_for_every_day(converged, spark):
    s = converged
    expected = truth(s.archive, s.stream)
    production = spark.table(table_id(spark, PROD_NAMESPACE, DATASET))
    got = {
        (r["event_date"].isoformat(), r["event_hour"]): r["views"]
        for r in production.groupBy("event_date", "event_hour").agg(F.sum("views").alias("views")).collect()
    }
    for i in range(DAYS):
        day = (D0 + timedelta(days=i)).isoformat()
        want = {(day, int(h)): n for h, n in expected[day]["starts_by_hour"].items() if n}
        assert {k: v for k, v in got.items() if k[0] == day and v} == want, day
    assert s.late_files >= 3 and s.runs["crash"] == 3, s.log


def test_the_ledger_agrees_and_every_day_is_promoted(converged, spark):
    spec = build_dataset_spec()
    assert not reconcile_ledger(spark, spec).changed
    states = {st.key: st.state for st in dataset_status(open_catalog(), spec, {STREAM: DAILY})}
    for i in range(DAYS):
        day = (D0 + timedelta(days=i)).isoformat()
        assert states.get(day) == "promoted", (day, states.get(day))


def test_nothing_is_left_running_and_the_runs_are_bounded(converged):
    s = converged
    assert s.active_runs() == []
    runs = s.run_count()
    assert runs <= MAX_RUNS, (runs, s.log)
    assert s.converged_after <= MAX_TICKS_TO_CONVERGE, s.log


def build_dataset_spec() -> DatasetSpec:
    dataset = demo_spec_data("views_per_title")
    dataset.update(name=DATASET, source_stream=STREAM)
    return DatasetSpec.model_validate(dataset)
