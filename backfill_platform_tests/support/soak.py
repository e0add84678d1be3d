"""The soak's machinery: what Dagster's daemon does for the refresh, tick by tick, with real runs.

Each tick advances a simulated clock, delivers the archive files whose ingestion hour has ended,
evaluates the project's automation conditions at that time (`evaluate_automation_conditions`, what the
refresh's sensor calls) and executes every run they request with the real assets (Spark, Iceberg, ledger,
gate) on an in-memory Dagster instance: one run per contiguous range of partitions, the assets requested
for the same partitions together (the single-run backfill policy), upstream first. Crashes are armed at the
platform's failpoints for a run; the run dies there as under SIGKILL.

Used by `test_refresh_soak.py` (days) and `test_hourly_refresh_soak.py` (hours, and New York days rolled
up from them).
"""

from __future__ import annotations

import gzip
import json
import random
import shutil
from collections import Counter
from collections.abc import Callable, Iterator
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

from backfill_platform import faults
from backfill_platform.devtools.generator.playback import GeneratorConfig, generate_playback_archive
from backfill_platform.devtools.generator.truth import compute_partitions, read_archive
from backfill_platform.specs.grain import Grain
from backfill_platform.specs.stream import StreamSpec

HOUR = timedelta(hours=1)
LAYOUT = "%Y/%m/%d/%H"
RANGE_START, RANGE_END = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"


def at(day: date, hours: float = 0) -> datetime:
    """`day`'s UTC midnight, plus `hours`."""
    return datetime.combine(day, datetime.min.time(), tzinfo=UTC) + timedelta(hours=hours)


def hour_of(path: Path, root: Path) -> datetime:
    """The ingestion hour of an archive file, from its folder."""
    return datetime.strptime(str(path.parent.relative_to(root)), LAYOUT).replace(tzinfo=UTC)


@dataclass
class Soak:
    """The simulated world: the archive, the files still to come, the instance, the clock, what ran."""

    stream: StreamSpec
    archive: Path
    staged: Path
    instance: DagsterInstance
    resources: dict
    assets: list
    clock: datetime
    rng: random.Random
    cursor: object = None
    last_evaluation: object = None  # the last tick's `evaluate_automation_conditions` result
    ticks: int = 0
    runs: Counter = field(default_factory=Counter)
    log: list[str] = field(default_factory=list)
    # Every run but observations: (tick, asset names, first partition, last partition, outcome).
    history: list[tuple[int, tuple[str, ...], str, str, str]] = field(default_factory=list)
    held: dict[Path, datetime] = field(default_factory=dict)  # staged file -> when it arrives
    # Crashes to come: (from run number, failpoint, the namespace of the asset whose step reaches it).
    crashes: list[tuple[int, str, str]] = field(default_factory=list)
    late_files: int = 0
    # The next events run gets a late file of these events (event hour, ingestion hour), after its listing.
    late_in_flight: tuple[datetime, datetime] | None = None
    notes: dict = field(default_factory=dict)  # what a soak records for its assertions
    converged_after: int = 0  # ticks from the last file's arrival to the last run

    @property
    def definitions(self) -> Definitions:
        return Definitions(assets=self.assets, resources=self.resources)

    def active_runs(self) -> list:
        """Runs the instance still holds as queued, starting or started."""
        statuses = [DagsterRunStatus.STARTED, DagsterRunStatus.STARTING, DagsterRunStatus.QUEUED]
        return self.instance.get_runs(filters=RunsFilter(statuses=statuses))

    def run_count(self) -> int:
        """Runs launched, observations aside."""
        return sum(n for k, n in self.runs.items() if k != "observation")

    def deliver(self) -> None:
        """Move staged files whose hour has ended (or whose late arrival is due) into the archive."""
        for path in sorted(self.staged.rglob("*.jsonl.gz")):
            due = self.held.get(path, hour_of(path, self.staged) + HOUR)
            if due <= self.clock:
                target = self.archive / path.relative_to(self.staged)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(path, target)

    def last_arrival(self) -> datetime:
        """When the last staged file arrives."""
        ends = [hour_of(p, self.staged) + HOUR for p in self.staged.rglob("*.jsonl.gz")]
        return max(ends + list(self.held.values()))

    def late_file(self, event_hour: datetime, ingestion_hour: datetime) -> Path:
        """Three 'start' events of `event_hour` (at :10, :20, :30), written now into `ingestion_hour`'s
        folder: a file the archive's writer delivered late."""
        self.late_files += 1
        n = self.late_files
        lines = [
            json.dumps(
                {
                    "event_id": f"soak-late-{n}-{i}",
                    "event_time": f"{event_hour:%Y-%m-%dT%H}:{10 * (i + 1):02d}:00.000Z",
                    "user_id": "u000001",
                    "title_id": "t0001",
                    "event_type": "start",
                    "position_sec": 0,
                    "device": "web",
                }
            )
            for i in range(3)
        ]
        folder = self.archive / ingestion_hour.strftime(LAYOUT)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"playback-{ingestion_hour:%Y-%m-%d-%H}-{9000 + n:04d}.jsonl.gz"
        path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0))
        self.log.append(
            f"{self.clock:%m-%d %H:%M} late file {path.name} (events of {event_hour:%m-%d %H}:00)"
        )
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

    def tick(self, step: timedelta, evaluated: Callable[[], None] | None = None) -> list[str]:
        """Advance the clock by `step`, deliver, evaluate (then call `evaluated`, if given), and run what
        was requested; the runs' outcomes."""
        self.clock += step
        self.ticks += 1
        self.deliver()
        result = evaluate_automation_conditions(
            defs=self.definitions, instance=self.instance, cursor=self.cursor, evaluation_time=self.clock
        )
        self.cursor, self.last_evaluation = result.cursor, result
        if evaluated is not None:
            evaluated()
        launched = []
        # As the daemon groups a request into runs: by partitions definition and requested partitions.
        by_partitions: dict[tuple, list[AssetKey]] = {}
        graph = self.definitions.resolve_asset_graph()
        for key in sorted((k for k in graph.get_all_asset_keys() if result.get_num_requested(k)), key=layer):
            if key.path[0] == "archive":
                launched.append(self.run([key], {}))
                continue
            partitions = tuple(sorted(p for p in result.get_requested_partitions(key) if p))
            by_partitions.setdefault((graph.get(key).partitions_def, partitions), []).append(key)
        for (_, partitions), keys in by_partitions.items():
            for first, last in contiguous_ranges(partitions):
                launched.append(self.run(keys, {RANGE_START: first, RANGE_END: last}))
        return launched

    def run(self, keys: list[AssetKey], tags: dict[str, str]) -> str:
        """Execute one run of `keys` (a crash armed if one is due); its outcome."""
        archive = [k for k in keys if k.path[0] == "archive"]
        if archive:
            assert keys == archive, keys
            observed = materialize(
                self.assets, selection=archive, instance=self.instance, resources=self.resources
            )
            assert observed.success  # an observation run, as the sensor launches
            self.runs["observation"] += 1
            return "observe"
        number = self.run_count() + 1
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
        # A crash is a failure at the armed failpoint; any other failure is a failure.
        failures = [e.step_failure_data.error for e in result.all_events if e.is_step_failure]
        messages = [error.to_string() for error in failures if error is not None]
        crashed = failpoint is not None and any("failpoint: the run worker died here" in m for m in messages)
        outcome = "ok" if result.success else ("crash" if crashed else "failed")
        self.runs[outcome] += 1
        names = tuple(k.path[-1] for k in keys)
        self.history.append((self.ticks, names, tags.get(RANGE_START, ""), tags.get(RANGE_END, ""), outcome))
        self.log.append(
            f"{self.clock:%m-%d %H:%M} run {number} {[k.path[-1] for k in keys]} "
            f"{tags.get(RANGE_START)}..{tags.get(RANGE_END)}: {outcome}"
            + (f" at {failpoint}" if failpoint else "")
        )
        return outcome


@contextmanager
def soak_world(
    stream: StreamSpec,
    definitions: Definitions,
    archive: Path,
    staged: Path,
    generated: GeneratorConfig,
    quiet_until: datetime,
    resources: dict,
) -> Iterator[Soak]:
    """A soak at the start of its first day: `generated`'s archive staged (quiet hours filled in up to
    `quiet_until`), an empty archive at `archive`, and an in-memory Dagster instance. In memory: a soak's
    ~100 runs and evaluations write tens of thousands of events, and a SQLite instance on disk opens a
    connection per write (126 s of a soak in SQLAlchemy, py-spy); what is tested is the automation and the
    lakehouse, not Dagster's storage."""
    generate_playback_archive(staged, generated)
    (staged / "_truth.json").unlink()
    fill_empty_hours(staged, at(generated.start), quiet_until)
    shutil.rmtree(archive, ignore_errors=True)
    archive.mkdir(parents=True)
    with DagsterInstance.ephemeral() as instance:
        yield Soak(
            stream=stream,
            archive=archive,
            staged=staged,
            instance=instance,
            resources=resources,
            assets=list(definitions.assets),
            clock=at(generated.start),
            rng=random.Random(generated.seed),
        )


def fill_empty_hours(root: Path, start: datetime, end: datetime) -> None:
    """One event in every ingestion hour without a file: a quiet hour is not a lost one here, so that only
    the hours the soak holds back make a partition unsettled."""
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


def layer(key: AssetKey) -> int:
    """Upstream first: the archive, events, shadows, production."""
    return ["archive", "raw", "shadow", "prod"].index(key.path[0])


def contiguous_ranges(keys: tuple[str, ...]) -> list[tuple[str, str]]:
    """Contiguous runs of partition keys (days or hours, by their shape), as (first, last)."""
    ranges: list[list[str]] = []
    for key in keys:
        if ranges and Grain.of_key(key).shift(ranges[-1][1], 1) == key:
            ranges[-1][1] = key
        else:
            ranges.append([key, key])
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
    """Stands in for `faults.die`. Same effect on the lakehouse as SIGKILL (nothing after the failpoint
    runs), and on Dagster's records as a dead worker once run monitoring has failed it: the run ends in an
    unexpected termination."""
    raise DagsterExecutionInterruptedError("failpoint: the run worker died here")


def truth(archive: Path, stream: StreamSpec) -> dict[str, dict]:
    """Per UTC day, the generator's accounting of the archive as it is now (`starts_by_hour` included)."""
    lines = read_archive(archive)
    ms = lambda t: int(t.total_seconds() * 1000)  # noqa: E731
    return compute_partitions(lines, ms(stream.allowed_lateness), ms(stream.clock_skew))
