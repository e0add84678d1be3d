"""Soak at hourly grain: the refresh of an hourly stream, an hourly dataset over it and New York days rolled
up from its hours, over four simulated days with chaos, converges unattended; a late file changes exactly
its hour in production, and the New York day holding it.

The daemon's work is simulated as in `test_refresh_soak.py` (`support/soak.py`): ticks of six simulated
hours, real runs. Chaos, seeded: one ingestion hour arrives seven hours late (the hours reading it fail
their `settled` check until it comes), a promotion dies before its ledger write, and once the first New
York day is promoted, a file of events of one of its hours is written into a past ingestion hour.

A late file's ingestion hour is read by every event hour whose read window holds it (allowed lateness +
clock skew + 2 h of them), so the refresh re-derives, re-validates and re-promotes those hours, and the
New York days holding them; production's content changes in exactly the late events' hour and its day.
The archive goes on with quiet hours, as a live stream does; the soak ends at a fixed time.
"""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from pyspark.sql import functions as F

from backfill_platform import faults, settings
from backfill_platform.components.registry import Project, demo_spec_data, project_definitions
from backfill_platform.devtools.generator.playback import GeneratorConfig
from backfill_platform.lakehouse.resources import open_catalog
from backfill_platform.lakehouse.snapshots import current_snapshot_id
from backfill_platform.operations.status import dataset_status
from backfill_platform.pipeline.hour_mapping import ReadWindow
from backfill_platform.pipeline.ledger.commits import commit_days, production_commits
from backfill_platform.pipeline.ledger.reconcile import reconcile_ledger
from backfill_platform.pipeline.names import production_table
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.grain import HOURLY, Grain
from backfill_platform.specs.stream import StreamSpec
from backfill_platform_tests.support.datasets import hourly_dataset_data, local_daily_data
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

pytestmark = [pytest.mark.timeout(1200), pytest.mark.long_running(minutes=4)]

STREAM, HOURLY_DATASET, DAILY_DATASET = "playback_soak_hourly", "views_soak_hourly", "plays_soak_new_york"
ZONE = "America/New_York"
NEW_YORK = Grain("day", ZONE)
D0 = date(2026, 6, 1)
DAYS = 2  # compared: UTC days and New York days; a third is generated, so that their read windows are whole
EVENTS_PER_DAY = 240
SEED = 11
TICK = 6 * HOUR
END = at(D0 + timedelta(days=4))  # quiet hours are delivered after the generated days, up to here
HELD_HOUR = at(D0, 20)  # this ingestion hour's files arrive seven hours late
# Tick 9 (D0 + 2 days 06:00) promotes the first New York day; the late file is written two ticks later.
LATE_TICK = 11
# The late file's chain: the archive observed (tick 11), its hours' events, shadow and production, then
# its New York day's shadow and production. Measured: repaired 3 ticks after the tick it was written in.
MAX_TICKS_TO_REPAIR = 5
# Observations aside: three per tick (events, shadow, production of the hours that settled), a shadow and a
# production run per New York day, and the chains that chaos re-runs. Measured: 55.
MAX_RUNS = 3 * int((END - at(D0)) / TICK) + 2 * DAYS + 3 * 5


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    """A team's project: the demo's hourly stream renamed into its own archive, an hourly dataset over it and
    New York days rolled up from its hours."""
    stream = demo_spec_data("playback_hourly")
    stream.update(name=STREAM, first_partition=D0.isoformat(), archive_observation_cron="0 */6 * * *")
    stream["archive"]["location"] = f"archive/{STREAM}"
    specs = [
        stream,
        hourly_dataset_data("v1", STREAM, HOURLY_DATASET),
        local_daily_data(DAILY_DATASET, STREAM, ZONE),
    ]
    return write_project(tmp_path_factory.mktemp("soak_hourly_project"), specs)


@pytest.fixture(scope="module")
def specs(project: Project) -> tuple[StreamSpec, DatasetSpec, DatasetSpec]:
    loaded = load_project(project)
    return loaded.streams[STREAM], loaded.datasets[HOURLY_DATASET], loaded.datasets[DAILY_DATASET]


@pytest.fixture(scope="module")
def soak(
    specs, project: Project, data_dir: Path, spark_resource, catalog, tmp_path_factory: pytest.TempPathFactory
):
    stream, _, _ = specs
    definitions = project_definitions(project)
    generated = GeneratorConfig(start=D0, days=DAYS + 1, events_per_day=EVENTS_PER_DAY, seed=SEED)
    with soak_world(
        stream,
        definitions,
        data_dir / "archive" / STREAM,
        tmp_path_factory.mktemp("soak_hourly_staged"),
        generated,
        quiet_until=END,
        resources={"spark": spark_resource, "catalog": catalog},
    ) as soak:
        yield soak


@pytest.fixture(scope="module")
def converged(soak: Soak, specs, spark, monkeypatch_module) -> Soak:
    """Run the soak to its end. `s.notes["late"]` holds the late file's hours and production's snapshots just
    before it was written."""
    s = soak
    _, hourly, daily = specs
    monkeypatch_module.setattr(settings, "now", lambda: s.clock)
    monkeypatch_module.setattr(faults, "die", interrupt_instead_of_kill)
    for path in (s.staged / HELD_HOUR.strftime(LAYOUT)).glob("*.jsonl.gz"):
        s.held[path] = HELD_HOUR + 8 * HOUR
    s.crashes = [(s.rng.randrange(4, 16), faults.PROMOTION_BEFORE_LEDGER, "prod")]
    while s.clock < END:
        if s.ticks + 1 == LATE_TICK:
            event_hour = at(D0, 6 + s.rng.randrange(0, 9))  # 02:00 to 10:00 of New York's first day
            ingestion_hour = event_hour + s.rng.randrange(1, 4) * HOUR
            s.notes["late"] = {
                "event_hour": event_hour,
                "ingestion_hour": ingestion_hour,
                "hourly_before": current_snapshot_id(spark, production_table(spark, hourly)),
                "daily_before": current_snapshot_id(spark, production_table(spark, daily)),
            }
            s.late_file(event_hour, ingestion_hour)
        s.tick(TICK)
    print("\n[soak] " + "\n[soak] ".join(s.log))
    print(f"[soak] {s.ticks} ticks of {TICK}; runs {dict(s.runs)}")
    return s


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def views_by_hour(spark, table: str, snapshot: int | None = None) -> dict[str, int]:
    frame = spark.read.option("snapshot-id", snapshot).table(table) if snapshot else spark.table(table)
    key = F.date_format("event_hour", "yyyy-MM-dd-HH:00")
    return {
        r["key"]: r["views"]
        for r in frame.groupBy(key.alias("key")).agg(F.sum("views").alias("views")).collect()
    }


def plays_by_day(spark, table: str, snapshot: int | None = None) -> dict[str, int]:
    frame = spark.read.option("snapshot-id", snapshot).table(table) if snapshot else spark.table(table)
    rows = frame.groupBy("event_date").agg(F.sum("plays").alias("plays")).collect()
    return {r["event_date"].isoformat(): r["plays"] for r in rows}


def starts_by_hour(archive: Path, stream: StreamSpec) -> dict[str, int]:
    """Starts per UTC event hour, by the generator's accounting rules over the archive as it ended."""
    return {
        f"{day}-{int(hour):02d}:00": n
        for day, partition in truth(archive, stream).items()
        for hour, n in partition["starts_by_hour"].items()
        if n
    }


def new_york_days() -> list[str]:
    return [(D0 + timedelta(days=i)).isoformat() for i in range(DAYS)]


def test_every_hour_and_every_new_york_day_equals_the_truth_of_the_archive(converged, specs, spark):
    s = converged
    _, hourly, daily = specs
    expected = starts_by_hour(s.archive, s.stream)
    got = views_by_hour(spark, production_table(spark, hourly))
    compared = HOURLY.keys_between(at(D0), at(D0 + timedelta(days=DAYS)))
    assert {k: got.get(k, 0) for k in compared} == {k: expected.get(k, 0) for k in compared}
    plays = plays_by_day(spark, production_table(spark, daily))
    for day in new_york_days():
        # The day's own UTC hours, by the zone's rules (June: 04:00 to 04:00 UTC).
        start, end = NEW_YORK.bounds(day)
        assert end - start == 24 * HOUR and start.astimezone(ZoneInfo(ZONE)).hour == 0
        want = sum(expected.get(k, 0) for k in HOURLY.keys_between(start, end))
        assert plays.get(day) == want, day
    assert s.late_files == 1 and s.runs["crash"] == 1, s.log


def test_a_late_file_changes_only_its_hour_and_its_new_york_day(converged, specs, spark):
    s = converged
    stream, hourly, daily = specs
    late = s.notes["late"]
    late_hour = HOURLY.key(late["event_hour"])
    late_day = late["event_hour"].astimezone(ZoneInfo(ZONE)).date().isoformat()
    hourly_table, daily_table = production_table(spark, hourly), production_table(spark, daily)
    before, after = (
        views_by_hour(spark, hourly_table, late["hourly_before"]),
        views_by_hour(spark, hourly_table),
    )
    assert {k for k in before if after.get(k) != before[k]} == {late_hour}
    assert after[late_hour] == before[late_hour] + 3
    days_before, days_after = (
        plays_by_day(spark, daily_table, late["daily_before"]),
        plays_by_day(spark, daily_table),
    )
    assert late_day in days_before
    assert {d for d in days_before if days_after.get(d) != days_before[d]} == {late_day}

    # What was re-promoted: exactly the hours whose read windows hold the file's ingestion hour (lateness +
    # skew + 2 h of them, not the day), and the New York days holding those hours.
    window = lambda key: ReadWindow.of(stream, *HOURLY.bounds(key)).hours()  # noqa: E731
    readers = {key for key in before if late["ingestion_hour"] in window(key)}
    assert late_hour in readers and len(readers) <= 12
    reader_days = {NEW_YORK.key(HOURLY.start(key)) for key in readers}
    for table, old, allowed, changed, snapshot in (
        (hourly_table, before, readers, late_hour, late["hourly_before"]),
        (daily_table, days_before, reader_days, late_day, late["daily_before"]),
    ):
        lineage = production_commits(spark, table)
        after_late = lineage[[c["snapshot_id"] for c in lineage].index(snapshot) + 1 :]
        re_promoted = {k for c in after_late for k in (commit_days(c["summary"]) or []) if k in old}
        assert changed in re_promoted and re_promoted == allowed & set(old), (table, re_promoted, allowed)

    # Repaired within a bounded number of ticks, with nobody acting.
    repairs = [
        tick
        for tick, names, first, last, outcome in s.history
        if tick >= LATE_TICK and outcome == "ok" and f"{DAILY_DATASET}_production" in names
        and first <= late_day <= last
    ]  # fmt: skip
    assert repairs and max(repairs) - LATE_TICK < MAX_TICKS_TO_REPAIR, s.log


def test_the_ledger_agrees_and_every_partition_is_promoted(converged, specs, spark):
    _, hourly, daily = specs
    for spec in (hourly, daily):
        assert not reconcile_ledger(spark, spec).changed, spec.name
    states = {st.key: st.state for st in dataset_status(open_catalog(), hourly, {STREAM: HOURLY})}
    for key in HOURLY.keys_between(at(D0), at(D0 + timedelta(days=DAYS))):
        assert states.get(key) == "promoted", (key, states.get(key))
    states = {st.key: st.state for st in dataset_status(open_catalog(), daily, {STREAM: HOURLY})}
    for day in new_york_days():
        assert states.get(day) == "promoted", (day, states.get(day))


def test_nothing_is_left_running_and_the_runs_are_bounded(converged):
    s = converged
    assert s.active_runs() == []
    runs = s.run_count()
    assert runs <= MAX_RUNS, (runs, s.log)
