"""The daily refresh watched end to end: live streams in a team's project, late files, the daemon's work.

A stream is live relative to the real clock when its first day is a few settled days ago: `live_archives`
generates its archive (and its impressions stream's) for those days and checks they are settled now and
inside the refresh horizon. `team_project` declares the streams and datasets as `backfill-platform init`
writes a project, for a `dagster dev` of their own. `write_late_files` delivers late events to an ingestion
hour already read. `Watch` polls the server until the sensor's work is done and, when it is not in time,
fails with the evidence (ticks, runs, backfills, the server's log). `lake_state` and `join_state` read what
the runs committed, through a Spark session of the server's lakehouse.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TypeVar

import pytest
import yaml
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from backfill_platform import settings
from backfill_platform.components.project import init_project
from backfill_platform.devtools.generator.impressions import (
    attribution_truth,
    generate_impressions_archive,
    playback_starts,
)
from backfill_platform.devtools.generator.playback import GeneratorConfig, generate_playback_archive
from backfill_platform.lakehouse.tables import (
    PLATFORM_NAMESPACE,
    PROD_NAMESPACE,
    RAW_NAMESPACE,
    SHADOW_NAMESPACE,
    table_id,
)
from backfill_platform.pipeline.archive.listing import list_files
from backfill_platform.pipeline.archive.stream_archive import archive_for
from backfill_platform.pipeline.events.completeness import completeness
from backfill_platform.pipeline.hour_mapping import ReadPlan, ReadWindow
from backfill_platform.pipeline.ledger.latest import latest_key
from backfill_platform.pipeline.ledger.ledger import ledger
from backfill_platform.specs.stream import StreamSpec
from backfill_platform_tests.support.dagster_dev import DagsterDev
from backfill_platform_tests.support.dagster_graphql import (
    ACTIVE_BACKFILL_STATUSES,
    ACTIVE_RUN_STATUSES,
    backfills,
    days_materialized_after,
    runs,
    ticks,
)
from backfill_platform_tests.support.lakehouse import lakehouse_session
from backfill_platform_tests.support.processes import wait_until
from backfill_platform_tests.support.specs import write_component

T = TypeVar("T")

# How often the server is asked again: each of its answers reads the event log, and the steps it waits
# for take tens of seconds (a sensor tick, the backfill daemon's loop).
POLL_SECONDS = 5


# --- the live streams ------------------------------------------------------------------------------------


def team_project(root: Path, specs: dict[str, dict]) -> Path:
    """A project as `backfill-platform init` writes it, each spec a Stream or Dataset component, and a
    workspace that `dagster dev` serves it from (its folder as the working directory, as `dg dev` does)."""
    init_project(root)
    for name, spec in specs.items():
        write_component(root / root.name / "defs", name, spec)
    location = {"module_name": f"{root.name}.definitions", "working_directory": str(root)}
    workspace = {"load_from": [{"python_module": {**location, "location_name": root.name}}]}
    (root / "workspace.yaml").write_text(yaml.safe_dump(workspace, sort_keys=False))
    return root


@dataclass(frozen=True)
class LiveStream:
    """A stream live relative to the real clock, and the impressions stream beside it."""

    spec: StreamSpec
    project: Path  # the root of the team project that declares the streams and datasets
    archive: Path
    days: list[date]  # the settled days, oldest first
    impressions: Path  # the impressions stream's archive
    late_play: dict  # the first play of the day after the middle one that the late impression leads

    @property
    def keys(self) -> list[str]:
        return [d.isoformat() for d in self.days]

    @property
    def middle(self) -> date:
        return self.days[len(self.days) // 2]

    def next_day_hour(self, hour: int) -> datetime:
        """The ingestion hour `hour`:00 of the day after the middle one."""
        return datetime.combine(self.middle + timedelta(days=1), datetime.min.time(), tzinfo=UTC) + timedelta(
            hours=hour
        )


def latest_settled_day(spec: StreamSpec, now: datetime) -> date:
    """The latest day of `spec` whose horizon (its end, lateness and clock skew) has passed at `now`."""
    day = now.date() - timedelta(days=1)
    while ReadWindow.of(spec, *spec.grain.bounds(day)).high > now:
        day -= timedelta(days=1)
    return day


def live_archives(
    data_dir: Path,
    spec: StreamSpec,
    impressions: str,
    project: Path,
    settled_days: int,
    events_per_day: int,
    seed: int,
) -> LiveStream:
    """`spec`'s archive in `data_dir`, generated for its first `settled_days` days (and the next, so that it
    is complete if it settles while the test runs), checked settled now and inside the refresh horizon; and
    the archive of the impressions stream `impressions`, on the same plays."""
    start = spec.first_partition
    archive = data_dir / "archive" / spec.name
    config = GeneratorConfig(start=start, days=settled_days + 1, events_per_day=events_per_day, seed=seed)
    generate_playback_archive(archive, config)
    impressions_archive = data_dir / "archive" / impressions
    days = [start + timedelta(days=i) for i in range(settled_days)]

    # Settled now: horizon passed and no hole in any read window (a small archive could have an empty hour).
    now = datetime.now(UTC)
    with pytest.MonkeyPatch.context() as patch:  # the archive as the server finds it, in its data directory
        patch.setenv(settings.DATA_DIR_ENV, str(data_dir))
        archive_files = archive_for(spec)
    files = list_files(archive_files, datetime.combine(start, datetime.min.time(), tzinfo=UTC), now)
    status = completeness(spec, ReadPlan.for_partitions(spec, days), files, now)
    assert all(s.settled for s in status.values()), {d: s.problem() for d, s in status.items()}
    # Inside the refresh horizon (counted from the end of the latest complete day, today 00:00).
    assert all(
        datetime.combine(d + timedelta(days=1), datetime.min.time(), tzinfo=UTC)
        > datetime.combine(now.date(), datetime.min.time(), tzinfo=UTC) - spec.refresh_horizon
        for d in days
    )
    # A play of the day after the middle one, within 29 minutes of midnight, that no impression of its own
    # day leads: a late impression in the middle day's last millisecond leads it through the lookback. The
    # impressions' seed is the first that gives such a play (the generators draw the same numbers whatever
    # the dates, so the search ends at the same seed every day).
    middle, next_day = days[settled_days // 2], days[settled_days // 2] + timedelta(days=1)
    midnight_ms = int(datetime.combine(next_day, datetime.min.time(), tzinfo=UTC).timestamp() * 1000)
    first_plays = [
        play
        for play in playback_starts(archive, spec.allowed_lateness, spec.clock_skew)
        if midnight_ms <= play["_t"] < midnight_ms + 29 * 60_000
    ]
    for impressions_seed in range(11, 61):
        generate_impressions_archive(impressions_archive, archive, seed=impressions_seed)
        truth = attribution_truth(archive, impressions_archive, [next_day.isoformat()])
        candidates = [
            play
            for play in first_plays
            if truth[play["event_id"]]["impression_id"] is None or truth[play["event_id"]]["across_midnight"]
        ]
        if candidates:
            break
        shutil.rmtree(impressions_archive)
    assert candidates, f"no play in the first 29 minutes of {next_day} to attribute across midnight"
    late_play = {**candidates[0], "midnight_ms": midnight_ms, "middle": middle}
    return LiveStream(
        spec=spec,
        project=project,
        archive=archive,
        days=days,
        impressions=impressions_archive,
        late_play=late_play,
    )


def write_late_files(
    live: LiveStream,
    hour: datetime,
    *,
    title: str,
    starts: int,
    event_hour: int,
    play_ids: str,
    impression_id: str,
) -> tuple[Path, float]:
    """A few valid 'start' events of the middle day (`starts` of `title` in its hour `event_hour`, their ids
    `play_ids` and a number), delivered late in the ingestion hour `hour` that was already read; and the
    impression `impression_id` of the late play, delivered late to the same hour of the impressions archive.
    Returns the play file and when both were written."""
    events = [
        {
            "event_id": f"{play_ids}{i}",
            "event_time": f"{live.middle.isoformat()}T{event_hour}:{10 * (i + 1):02d}:00.000Z",
            "user_id": "u000001",
            "title_id": title,
            "event_type": "start",
            "position_sec": 0,
            "device": "web",
        }
        for i in range(starts)
    ]
    folder = live.archive / hour.strftime(live.spec.archive.layout)
    assert folder.is_dir(), f"{folder}: the hour must have been archived (and read) already"
    path = folder / f"playback-{hour:%Y-%m-%d-%H}-late-0002.jsonl.gz"
    partial = folder / f".{path.name}.partial"  # not an archive file name: never listed half-written
    partial.write_bytes(gzip.compress("".join(json.dumps(e) + "\n" for e in events).encode()))
    os.replace(partial, path)
    # An impression of the next day's first play, shown in the middle day's last millisecond, delivered
    # late to the same ingestion hour of the impressions archive.
    play = live.late_play
    impression = {
        "event_id": impression_id,
        "event_time": f"{play['middle'].isoformat()}T23:59:59.999Z",
        "user_id": play["user_id"],
        "title_id": play["title_id"],
        "row": "trending",
    }
    folder = live.impressions / hour.strftime(live.spec.archive.layout)
    folder.mkdir(parents=True, exist_ok=True)
    late_impressions = folder / f"impressions-{hour:%Y-%m-%d-%H}-late-0002.jsonl.gz"
    partial = folder / f".{late_impressions.name}.partial"
    partial.write_bytes(gzip.compress((json.dumps(impression) + "\n").encode()))
    os.replace(partial, late_impressions)
    return path, time.time()


# --- waiting on the daemon -------------------------------------------------------------------------------


class Watch:
    """Polls the server until a condition holds, within the overall deadline (a `time.monotonic()` instant);
    fails with the evidence. `observed`: the archive asset whose observations tell the sensor's state."""

    def __init__(self, dev: DagsterDev, selector: dict, deadline: float, observed: list[str]):
        self.dev, self.selector, self.deadline, self.observed = dev, selector, deadline, observed

    def until(self, what: str, condition: Callable[[], T]) -> T:
        """`condition`'s value once truthy; the server exiting fails at once."""

        def holds() -> T:
            self.dev.assert_running()
            return condition()

        return wait_until(
            holds,
            timeout=max(0.0, self.deadline - time.monotonic()),
            every=POLL_SECONDS,
            what=lambda: f"{what}\n\n{self.evidence()}",
        )

    def quiet(self, what: str) -> float:
        """Until nothing the sensor launched is in progress, the live archive has been observed, and a
        sensor tick that began after both requested nothing but observations. Returns that tick's time."""

        def quiet_tick() -> float | None:
            all_runs = runs(self.dev)
            by_id = {r.run_id: r for r in all_runs}
            busy = [r for r in all_runs if r.status in ACTIVE_RUN_STATUSES and not r.is_observation]
            busy_backfills = [b for b in backfills(self.dev) if b["status"] in ACTIVE_BACKFILL_STATUSES]
            observed = [
                r.end
                for r in all_runs
                if r.is_observation
                and "/".join(self.observed) in r.assets
                and r.status == "SUCCESS"
                and r.end is not None
            ]
            if busy or busy_backfills or not observed:
                return None
            settled_at = max(
                [min(observed)]
                + [r.end for r in all_runs if not r.is_observation and r.end is not None]
                + [b["endTimestamp"] or b["timestamp"] for b in backfills(self.dev)]
            )
            for tick in ticks(self.dev, self.selector, limit=20):
                if tick["status"] in ("SUCCESS", "SKIPPED") and tick["timestamp"] > settled_at + 1:
                    requested = [by_id.get(run_id) for run_id in tick["runIds"]]
                    if all(r is not None and r.is_observation for r in requested):
                        return tick["timestamp"]
            return None

        return self.until(f"{what} (then a sensor tick requesting nothing more)", quiet_tick)

    def evidence(self) -> str:
        """The sensor's latest ticks, the runs and backfills, and the tail of the server's log."""
        lines = ["sensor ticks (newest first):"]
        try:
            for tick in ticks(self.dev, self.selector, limit=25):
                requested = "; ".join(
                    f"{'/'.join(r['assetKey']['path'])} {r['partitionKeys'][:4]}"
                    for r in tick["requestedMaterializationsForAssets"]
                )
                lines.append(
                    f"  {tick['tickId']} {tick['status']:<8} "
                    f"{time.strftime('%H:%M:%S', time.gmtime(tick['timestamp']))} runs/backfills "
                    f"{tick['runIds']} {requested} {tick['skipReason'] or ''} "
                    f"{(tick['error'] or {}).get('message', '')[:1500]}"
                )
            lines.append("runs (newest first):")
            lines.extend(f"  {r.describe()}" for r in runs(self.dev)[:40])
            lines.append("backfills:")
            lines.extend(f"  {b['id']} {b['status']}" for b in backfills(self.dev))
        except Exception as error:  # the evidence must not hide the timeout
            lines.append(f"(could not read the server: {error!r})")
        lines.append(f"dagster dev log (tail):\n{self.dev.log_tail(8000)}")
        return "\n".join(lines)


def drain(dev: DagsterDev, timeout: float = 120) -> None:
    """Wait (bounded) for the runs already launched to end; never fails by itself (it runs in a `finally`,
    where a failure of its own would hide the test's)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(r.status in ACTIVE_RUN_STATUSES for r in runs(dev)):
        time.sleep(POLL_SECONDS)


def promoted_since(
    dev: DagsterDev, productions: Sequence[list[str]], days: list[str], after: float
) -> set[str]:
    """The days promoted after `after` in every one of `productions` (production assets' paths)."""
    promoted = [days_materialized_after(dev, production, days, after) for production in productions]
    return set.intersection(*promoted)


# --- the lakehouse, read back ----------------------------------------------------------------------------


@dataclass(frozen=True)
class DayState:
    """A day of a dataset as the lakehouse holds it: its current promotion and production rows."""

    promoted_snapshot_id: int
    promotion_run_id: str
    records: int  # archive records attributed to the day, in its latest validation
    rows: dict[tuple, tuple]  # production rows: (hour, title) -> (views, watch_seconds, unique_viewers)


def lake_state(spark: SparkSession, data_dir: Path, dataset: str, days: list[date]) -> dict[str, DayState]:
    """Each of `days`' current promotion of `dataset` (ledger) and production rows, read through a new Spark
    session on the server's lakehouse: the runs are other processes committing to its embedded SQLite
    catalog."""
    session = lakehouse_session(spark, data_dir)
    production = table_id(session, PROD_NAMESPACE, dataset)
    session.sql(f"REFRESH TABLE {production}")
    rows = ledger(session, dataset).where(F.col("partition_date").isin(days)).collect()
    prod_rows = session.table(production).where(F.col("event_date").isin(days)).collect()
    state = {}
    for day in days:
        mine = [r for r in rows if r["partition_date"] == day]
        promoted = [
            r for r in mine if r["promoted_snapshot_id"] is not None and r["reverted_snapshot_id"] is None
        ]
        assert promoted, (day, mine)
        current = max(promoted, key=lambda r: r["promoted_at"])
        latest = max(mine, key=latest_key)
        state[day.isoformat()] = DayState(
            promoted_snapshot_id=current["promoted_snapshot_id"],
            promotion_run_id=current["promotion_run_id"],
            records=latest["records"],
            rows={
                (r["event_hour"], r["title_id"]): (r["views"], r["watch_seconds"], r["unique_viewers"])
                for r in prod_rows
                if r["event_date"] == day
            },
        )
    return state


def join_state(
    spark: SparkSession, data_dir: Path, join: str, days: list[date]
) -> dict[str, tuple[str, str | None]]:
    """The join `join`'s production rows of `days`: play id -> (day, impression id)."""
    session = lakehouse_session(spark, data_dir)
    production = table_id(session, PROD_NAMESPACE, join)
    session.sql(f"REFRESH TABLE {production}")
    rows = session.table(production).where(F.col("play_date").isin(days)).collect()
    return {r["play_id"]: (r["play_date"].isoformat(), r["impression_id"]) for r in rows}


def ensure_namespaces(spark: SparkSession, data_dir: Path) -> None:
    """The catalog's namespaces exist before the daemon's first runs. On a fresh catalog, the sensor's first
    tick starts two runs (this stream's and `playback`'s) that both create `raw` at once, and on the
    embedded SQLite catalog one of them can fail with SQLITE_BUSY_SNAPSHOT. (Created through a session of
    this process before any run commits: nothing of this process writes there afterwards.)"""
    session = lakehouse_session(spark, data_dir)
    for namespace in (RAW_NAMESPACE, SHADOW_NAMESPACE, PROD_NAMESPACE, PLATFORM_NAMESPACE):
        session.sql(f"CREATE NAMESPACE IF NOT EXISTS {table_id(session, namespace, 'any').rsplit('.', 1)[0]}")
