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

import gzip
import json
import os
import random
import shutil
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from dagster import (
    AssetKey,
    DagsterInstance,
    DagsterRunStatus,
    Definitions,
    RunsFilter,
    evaluate_automation_conditions,
    materialize,
)
from dagster._core.errors import DagsterExecutionInterruptedError
from pyspark.sql import functions as F

import backfill_platform.pipeline.events.assets as events_assets
from backfill_platform import faults, settings
from backfill_platform.devtools.generator.playback import GeneratorConfig, generate_playback_archive
from backfill_platform.devtools.generator.truth import compute_partitions, read_archive
from backfill_platform.lakehouse.resources import open_catalog
from backfill_platform.lakehouse.tables import PROD_NAMESPACE, table_id
from backfill_platform.operations.status import dataset_status
from backfill_platform.orchestration.factory import build_definitions
from backfill_platform.pipeline.ledger.reconcile import reconcile_ledger
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.grain import DAILY
from backfill_platform.specs.loader import SpecSet, builtin_spec_data
from backfill_platform.specs.stream import StreamSpec

pytestmark = [pytest.mark.timeout(1500), pytest.mark.long_running(minutes=6)]

STREAM, DATASET = "playback_soak", "views_soak"
D0 = date(2026, 6, 1)
DAYS = 6
EVENTS_PER_DAY = 300
SEED = 5
HOUR = timedelta(hours=1)
TICK = 2 * HOUR  # the daemon's ticks, in simulated time
TICKS_PER_DAY = 12
LAYOUT = "%Y/%m/%d/%H"
# Ticks without a run (16 h) after which the refresh is quiet: the last day settles after its lateness
# (8 h) + 1 h, then its chain runs.
DRAIN_TICKS = 8
# The bound on runs (observations aside): three per generated day (its first chain: events, shadow,
# production), and three per chaos event (the chain it re-runs: 4 late files, 3 crashes, the redelivery
# burst, the late hour), plus the late hour's day failing once before it arrives. Measured: 28.
MAX_RUNS = 3 * (DAYS + 1) + 3 * (4 + 3 + 2) + 1
# After the last file arrives: its day settles (lateness 8 h + 1 h), then one chain. Measured: 7.
MAX_TICKS_TO_CONVERGE = TICKS_PER_DAY


def at(day: date, hours: float = 0) -> datetime:
    return datetime.combine(day, datetime.min.time(), tzinfo=UTC) + timedelta(hours=hours)


@dataclass
class Soak:
    stream: StreamSpec
    archive: Path
    staged: Path
    instance: DagsterInstance
    resources: dict
    assets: list
    clock: datetime
    rng: random.Random
    cursor: object = None

    @property
    def definitions(self) -> Definitions:
        return Definitions(assets=self.assets, resources=self.resources)

    ticks: int = 0
    runs: Counter = field(default_factory=Counter)
    log: list[str] = field(default_factory=list)
    held: dict[Path, datetime] = field(default_factory=dict)  # staged file -> when it arrives
    # Crashes to come: (from run number, failpoint, the namespace of the asset whose step reaches it).
    crashes: list[tuple[int, str, str]] = field(default_factory=list)
    late_in_flight: date | None = None  # the next events run gets a late file of this day after listing
    late_files: int = 0
    converged_after: int = 0  # ticks from the last file's arrival to the last run

    def deliver(self) -> None:
        """Move staged files whose hour has ended (or whose late arrival is due) into the archive."""
        for path in sorted(self.staged.rglob("*.jsonl.gz")):
            hour = datetime.strptime(str(path.parent.relative_to(self.staged)), LAYOUT).replace(tzinfo=UTC)
            due = self.held.get(path, hour + HOUR)
            if due <= self.clock:
                target = self.archive / path.relative_to(self.staged)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(path, target)

    def late_file(self, day: date, hour_of_next_day: int) -> Path:
        """Three 'start' events of `day` 23:xx, delivered in an ingestion hour of the next day."""
        self.late_files += 1
        hour = at(day + timedelta(days=1), hour_of_next_day)
        n = self.late_files
        lines = [
            json.dumps(
                {
                    "event_id": f"soak-late-{n}-{i}",
                    "event_time": f"{day.isoformat()}T23:{10 * (i + 1):02d}:00.000Z",
                    "user_id": "u000001",
                    "title_id": "t0001",
                    "event_type": "start",
                    "position_sec": 0,
                    "device": "web",
                }
            )
            for i in range(3)
        ]
        folder = self.archive / hour.strftime(LAYOUT)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"playback-{hour:%Y-%m-%d-%H}-{9000 + n:04d}.jsonl.gz"
        path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0))
        self.log.append(f"{self.clock:%m-%d %H:%M} late file {path.name} ({day})")
        return path

    def redeliver(self, first_hour: datetime, hours: int) -> None:
        """A burst of redelivered files: each file of `hours` hours again, an hour later, under a new name."""
        for h in range(hours):
            hour = first_hour + h * HOUR
            for path in sorted((self.archive / hour.strftime(LAYOUT)).glob("*.jsonl.gz")):
                later = hour + HOUR
                folder = self.archive / later.strftime(LAYOUT)
                folder.mkdir(parents=True, exist_ok=True)
                copy = folder / f"playback-{later:%Y-%m-%d-%H}-{8000 + h:04d}.jsonl.gz"
                shutil.copy(path, copy)
        self.log.append(f"{self.clock:%m-%d %H:%M} redelivered {hours} hours from {first_hour:%m-%d %H}:00")

    def tick(self) -> list[str]:
        self.clock += TICK
        self.ticks += 1
        self.deliver()
        result = evaluate_automation_conditions(
            defs=self.definitions,
            instance=self.instance,
            cursor=self.cursor,
            evaluation_time=self.clock,
        )
        self.cursor = result.cursor
        if os.environ.get("SOAK_DEBUG"):
            self.explain(result)
        launched = []
        # What the backfill daemon does with the sensor's request: one run per contiguous range of days,
        # assets requested for the same days together (the single-run backfill policy), upstream first.
        by_days: dict[tuple[str, ...], list[AssetKey]] = {}
        keys = self.definitions.resolve_asset_graph().get_all_asset_keys()
        for key in sorted((k for k in keys if result.get_num_requested(k)), key=_layer):
            days = tuple(sorted(p for p in result.get_requested_partitions(key) if p))
            if key.path[0] == "archive":
                launched.append(self.run([key], {}))
                continue
            by_days.setdefault(days, []).append(key)
        for days, keys in by_days.items():
            for first, last in _ranges(days):
                tags = {
                    "dagster/asset_partition_range_start": first,
                    "dagster/asset_partition_range_end": last,
                }
                launched.append(self.run(keys, tags))
        return launched

    def explain(self, result) -> None:
        """Print production's evaluation for the days whose shadow is newer than production."""
        from dagster import AssetRecordsFilter

        for res in result.results:
            if res.key.path[0] != "prod":
                continue
            parent = next(iter(self.definitions.resolve_asset_graph().get(res.key).parent_keys))
            for i in range(DAYS):
                day = (D0 + timedelta(days=i)).isoformat()

                def latest(key, day=day):
                    r = self.instance.fetch_materializations(
                        AssetRecordsFilter(asset_key=key, asset_partitions=[day]), limit=1
                    ).records
                    return r[0].timestamp if r else 0

                if latest(parent) > latest(res.key):

                    def walk(node, depth=0, day=day):
                        keys = node.true_subset.expensively_compute_partition_keys()
                        self.log.append(
                            "  " * depth
                            + f"{node.condition.get_label() or node.condition.name}: {day in keys}"
                        )
                        for child in node.child_results:
                            walk(child, depth + 1)

                    self.log.append(f"{self.clock:%m-%d %H:%M} production {day} behind its shadow:")
                    walk(res)

    def run(self, keys: list[AssetKey], tags: dict[str, str]) -> str:
        archive = [k for k in keys if k.path[0] == "archive"]
        if archive:
            assert keys == archive, keys
            observed = materialize(
                self.assets, selection=archive, instance=self.instance, resources=self.resources
            )
            assert observed.success  # an observation run, as the sensor launches
            self.runs["observation"] += 1
            return "observe"
        number = sum(v for k, v in self.runs.items() if k != "observation") + 1
        namespaces = {k.path[0] for k in keys}
        due = [c for c in self.crashes if c[0] <= number and c[2] in namespaces][:1]
        failpoint = due[0][1] if due else None
        if due:
            self.crashes.remove(due[0])
        with armed(failpoint):
            result = materialize(
                self.assets,
                selection=keys,
                tags=tags,
                instance=self.instance,
                resources=self.resources,
                raise_on_error=False,
            )
        outcome = "ok" if result.success else ("crash" if failpoint else "failed")
        self.runs[outcome] += 1
        days = f"{tags.get('dagster/asset_partition_range_start', tags.get('dagster/partition'))}"
        days += f"..{tags.get('dagster/asset_partition_range_end', '')}"
        self.log.append(
            f"{self.clock:%m-%d %H:%M} run {number} {[k.path[-1] for k in keys]} {days}: {outcome}"
            + (f" at {failpoint}" if failpoint else "")
        )
        return outcome


def fill_empty_hours(root: Path, start: datetime, end: datetime) -> None:
    """One event in every ingestion hour without a file: a quiet hour is not a lost one here, so that only
    the hour the soak holds back makes a day unsettled."""
    hour = start
    while hour < end:
        folder = root / hour.strftime(LAYOUT)
        if not any(folder.glob("*.jsonl.gz")):
            folder.mkdir(parents=True, exist_ok=True)
            event = {"event_id": f"soak-quiet-{hour:%Y%m%d%H}", "event_time": f"{hour:%Y-%m-%dT%H}:30:00.000Z",
                     "user_id": "u000002", "title_id": "t0002", "event_type": "pause", "position_sec": 1,
                     "device": "tv"}  # fmt: skip
            path = folder / f"playback-{hour:%Y-%m-%d-%H}-0001.jsonl.gz"
            path.write_bytes(gzip.compress((json.dumps(event) + "\n").encode(), mtime=0))
        hour += HOUR


def _layer(key: AssetKey) -> int:
    return ["archive", "raw", "shadow", "prod"].index(key.path[0])


def _ranges(days: tuple[str, ...]) -> list[tuple[str, str]]:
    """Contiguous runs of days, as (first, last)."""
    ranges: list[list[str]] = []
    for day in days:
        if ranges and date.fromisoformat(day) - date.fromisoformat(ranges[-1][1]) == timedelta(days=1):
            ranges[-1][1] = day
        else:
            ranges.append([day, day])
    return [(a, b) for a, b in ranges]


@contextmanager
def armed(name: str | None) -> Iterator[None]:
    """Arm a failpoint for one run; it interrupts the run where it would SIGKILL the process. The
    environment is restored afterwards."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(faults.FAILPOINTS_ENV, raising=False)
        if name:
            patch.setenv(faults.FAILPOINTS_ENV, name)
        yield


def interrupt_instead_of_kill() -> None:
    # Same effect on the lakehouse as SIGKILL (nothing after the failpoint runs), and on Dagster's records
    # as a dead worker once run monitoring has failed it: the run ends in an unexpected termination.
    raise DagsterExecutionInterruptedError("failpoint: the run worker died here")


@pytest.fixture(scope="module")
def soak(data_dir: Path, spark_resource, catalog, tmp_path_factory: pytest.TempPathFactory):
    stream = builtin_spec_data("playback")
    stream.update(
        name=STREAM,
        first_partition=D0.isoformat(),
        archive_observation_cron="0 */2 * * *",
        refresh_horizon="10d",
    )
    stream["archive"]["location"] = f"archive/{STREAM}"
    dataset = builtin_spec_data("views_per_title")
    dataset.update(name=DATASET, source_stream=STREAM)
    spec = StreamSpec.model_validate(stream)
    specs = SpecSet(streams={STREAM: spec}, datasets={DATASET: DatasetSpec.model_validate(dataset)})
    definitions = build_definitions(specs)

    staged = tmp_path_factory.mktemp("soak_staged")
    config = GeneratorConfig(start=D0, days=DAYS + 1, events_per_day=EVENTS_PER_DAY, seed=SEED)
    generate_playback_archive(staged, config)
    (staged / "_truth.json").unlink()
    fill_empty_hours(staged, at(D0), at(D0 + timedelta(days=DAYS + 1)))
    archive = data_dir / "archive" / STREAM
    shutil.rmtree(archive, ignore_errors=True)
    archive.mkdir(parents=True)

    # An in-memory instance: the soak's ~120 runs and ~90 evaluations write tens of thousands of events,
    # and a SQLite instance on disk opens a connection per write (126 s of the soak in SQLAlchemy, py-spy).
    # What is tested is the automation and the lakehouse, not Dagster's storage.
    with DagsterInstance.ephemeral() as instance:
        yield Soak(
            stream=spec,
            archive=archive,
            staged=staged,
            instance=instance,
            resources={"spark": spark_resource, "catalog": catalog},
            assets=list(definitions.assets),
            clock=at(D0),
            rng=random.Random(SEED),
        )


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
            s.late_file(s.late_in_flight, 3)
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

    last_file = max(
        [datetime.strptime(str(p.parent.relative_to(s.staged)), LAYOUT).replace(tzinfo=UTC) + HOUR
         for p in s.staged.rglob("*.jsonl.gz")] + list(s.held.values())
    )  # fmt: skip
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
                s.late_file(s.rng.choice(settled_days), s.rng.randrange(0, 7))
        if tick == burst_tick:
            s.redeliver((s.clock - 6 * HOUR).replace(minute=0), 3)
        if tick == in_flight_tick:
            s.late_in_flight = (s.clock - timedelta(days=2)).date()
        launched = s.tick()
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


def truth(archive: Path, stream: StreamSpec) -> dict[str, dict]:
    lines = read_archive(archive)
    ms = lambda t: int(t.total_seconds() * 1000)  # noqa: E731
    return compute_partitions(lines, ms(stream.allowed_lateness), ms(stream.clock_skew))


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
    active = s.instance.get_runs(
        filters=RunsFilter(
            statuses=[DagsterRunStatus.STARTED, DagsterRunStatus.STARTING, DagsterRunStatus.QUEUED]
        )
    )
    assert active == []
    runs = sum(n for k, n in s.runs.items() if k != "observation")
    assert runs <= MAX_RUNS, (runs, s.log)
    assert s.converged_after <= MAX_TICKS_TO_CONVERGE, s.log


def build_dataset_spec() -> DatasetSpec:
    dataset = builtin_spec_data("views_per_title")
    dataset.update(name=DATASET, source_stream=STREAM)
    return DatasetSpec.model_validate(dataset)
