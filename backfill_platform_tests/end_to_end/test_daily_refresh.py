"""The daily refresh end to end with the daemon: a late archive file re-promotes the affected days, unattended.

A stream that is live relative to the real clock (`playback_live`: a small generated archive whose last
three days have settled, all within the 7-day refresh horizon, archive observed every minute) and the
demo dataset on it (`views_live`), declared in a team's project, are served by a real `dagster dev`
(webserver + daemon). The test turns
the `daily_refresh` sensor on as a user would (GraphQL `startSensor`) and then only watches:

1. the sensor observes the archive and requests events → active shadow → production for each settled
   day, until all three days are promoted;
2. a late file (a few valid 'start' events of the middle day) lands in an ingestion hour that was
   already read; the next observation gives that hour a new data version, and the sensor re-derives,
   re-validates and re-promotes exactly the days whose read windows hold the hour (computed with the
   automation's own mapping): the middle day, now counting the late views, and its neighbour; the
   other day keeps its production snapshot and rows.

Beside it, a second live stream (`impressions_live`, low volume: `allow_empty_hours`) and a dataset
joining both (`attributed_live`: plays attributed to impressions, the impressions read from 30 minutes
before each day). With the late play file, a late impression of the middle day's last minute lands in
the same ingestion hour; exactly the join days whose inputs it changed are re-promoted: the middle day
(the late plays) and the next, whose first play is now attributed to that impression through the lookback.

Every run and backfill in the instance was launched by the sensor. The time from writing the late file
to the re-promotion is printed (`pytest -s`). The sensor is stopped at the end.

The streams and datasets are a team's project of their own (as `backfill-platform init` writes it, each
spec a component), served by a `dagster dev` of its own on a data directory of its own (its runs commit
there, never to the test process's catalog). The sensor evaluates every stream of the code location:
the package's location would add the demo's streams and the session's October 2026 ones, whose last
days are inside the refresh horizon with no archive here; the sensor would request them too, and they
would fail `settled` and `records_present`, as a lost archive must (runs wasted, and failed days in the
shared instance where the UI tests count them). A team's project holds only its own.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
import yaml
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
from backfill_platform.orchestration.automation.sensor import INTERVAL_ENV, SENSOR_NAME
from backfill_platform.pipeline.archive.listing import list_files
from backfill_platform.pipeline.archive.stream_archive import archive_for
from backfill_platform.pipeline.events.completeness import completeness, day_horizon, required_hours
from backfill_platform.pipeline.hour_mapping import ArchiveReadWindowMapping
from backfill_platform.pipeline.ledger.latest import latest_key
from backfill_platform.pipeline.ledger.ledger import ledger
from backfill_platform.specs.loader import builtin_spec_data
from backfill_platform.specs.stream import StreamSpec
from backfill_platform_tests.support.dagster_dev import DagsterDev, dagster_dev_server
from backfill_platform_tests.support.lakehouse import lakehouse_session, own_data_dir
from backfill_platform_tests.support.specs import write_component

# Server start (up to 3 min) + both phases (REFRESH_TIMEOUT_SECONDS) + the final reads.
pytestmark = [pytest.mark.other_writers, pytest.mark.timeout(2100), pytest.mark.long_running(minutes=8)]

PROJECT = "refresh_project"
STREAM = "playback_live"
DATASET = "views_live"
SETTLED_DAYS = 3
EVENTS_PER_DAY = 500
SEED = 5  # every ingestion hour of the generated range has a file (not so for every seed at 500 a day)
# Both phases, from the sensor's start. The first promotion is three runs one after the other (events,
# shadow, production), each waiting for a sensor tick (10 s here) and the backfill daemon (30 s); the late
# file one observation (every minute) and one run. Measured: 6-11 min with 30 s ticks, the longer on a
# loaded 2-core machine; 12.5 min, then over 16 min, in CI runs whose other worker ran the soak, the bench
# and the fault chains beside it (2026-11-26). A bound, not a speed target: it only ends a stuck refresh.
REFRESH_TIMEOUT_SECONDS = 26 * 60
POLL_SECONDS = 5
# Each tick evaluates every asset's condition (~1.4 CPU-s in the code server here, mostly Dagster's event
# log queries): 10 s halves that against 5 s, and adds ~5 s to each of the four steps, which wait ~30 s for
# the backfill daemon anyway.
SENSOR_INTERVAL_SECONDS = 10

ARCHIVE = ["archive", f"{STREAM}_archive"]
EVENTS = ["raw", f"{STREAM}_events"]
SHADOW = ["shadow", f"{DATASET}__v2"]
PRODUCTION = ["prod", f"{DATASET}_production"]
LIVE_MATERIALIZED = (EVENTS, SHADOW, PRODUCTION)
IMPRESSIONS_STREAM = "impressions_live"
JOIN = "attributed_live"
IMPRESSIONS = ["raw", f"{IMPRESSIONS_STREAM}_events"]
JOIN_SHADOW = ["shadow", f"{JOIN}__v2"]
JOIN_PRODUCTION = ["prod", f"{JOIN}_production"]
LATE_IMPRESSION_ID = "late-impression-0"
# The join's transform, beside its spec (transforms resolve beside the spec file): the demo's v2 with the
# sources named as this test's streams.
JOIN_TRANSFORM = f"""
from backfill_platform.defs.attributed_plays.transform import attributed_v2


def v2({STREAM}, {IMPRESSIONS_STREAM}):
    return attributed_v2({STREAM}, {IMPRESSIONS_STREAM})
"""

LATE_TITLE = "t0001"
LATE_STARTS = 3
LATE_HOUR_OF_NEXT_DAY = 5  # the file's ingestion hour: 05:00 the day after the middle day
LATE_EVENT_HOUR = 23  # the late events' event-time hour on the middle day

AUTOMATION_TAG = "dagster/from_automation_condition"
SENSOR_TAG = "dagster/sensor_name"
BACKFILL_TAG = "dagster/backfill"
TICK_TAG = "dagster/tick"
ACTIVE_RUN_STATUSES = {"QUEUED", "NOT_STARTED", "STARTING", "STARTED", "CANCELING", "MANAGED"}
ACTIVE_BACKFILL_STATUSES = {"REQUESTED", "CANCELING", "FAILING"}


# --- GraphQL: what the UI asks ---------------------------------------------------------------------------

REPOSITORIES_QUERY = """
query Repositories {
  repositoriesOrError {
    __typename
    ... on RepositoryConnection { nodes { name location { name } sensors { name } } }
    ... on PythonError { message stack }
  }
}
"""

SENSOR_FIELDS = """
__typename
... on Sensor { name sensorState { id status } }
... on Error { message }
... on PythonError { stack }
"""

START_SENSOR_MUTATION = f"""
mutation StartSensor($selector: SensorSelector!) {{
  startSensor(sensorSelector: $selector) {{ {SENSOR_FIELDS} }}
}}
"""

SENSOR_QUERY = f"""
query Sensor($selector: SensorSelector!) {{
  sensorOrError(sensorSelector: $selector) {{ {SENSOR_FIELDS} }}
}}
"""

STOP_SENSOR_MUTATION = """
mutation StopSensor($id: String!) {
  stopSensor(id: $id) {
    __typename
    ... on StopSensorMutationResult { instigationState { id status } }
    ... on Error { message }
    ... on PythonError { stack }
  }
}
"""

TICKS_QUERY = """
query Ticks($selector: SensorSelector!, $limit: Int!) {
  sensorOrError(sensorSelector: $selector) {
    __typename
    ... on Sensor {
      sensorState {
        ticks(limit: $limit) {
          tickId
          status
          timestamp
          endTimestamp
          runIds
          skipReason
          error { message }
          requestedMaterializationsForAssets { assetKey { path } partitionKeys }
        }
      }
    }
  }
}
"""

RUNS_QUERY = """
query Runs {
  runsOrError {
    __typename
    ... on Runs {
      results {
        runId
        status
        creationTime
        startTime
        endTime
        assetSelection { path }
        tags { key value }
      }
    }
    ... on PythonError { message stack }
  }
}
"""

BACKFILLS_QUERY = """
query Backfills {
  partitionBackfillsOrError {
    __typename
    ... on PartitionBackfills {
      results { id status timestamp endTimestamp tags { key value } assetSelection { path } }
    }
    ... on PythonError { message stack }
  }
}
"""

MATERIALIZATIONS_QUERY = """
query Materializations($assetKey: AssetKeyInput!, $partitions: [String!]) {
  assetOrError(assetKey: $assetKey) {
    __typename
    ... on Asset { assetMaterializations(partitions: $partitions) { partition runId timestamp } }
  }
}
"""


def sensor_selector(dev: DagsterDev) -> dict[str, str]:
    """The selector of `daily_refresh`, looked up in the workspace (location and repository names)."""
    answer = dev.graphql(REPOSITORIES_QUERY)["repositoriesOrError"]
    assert answer["__typename"] == "RepositoryConnection", answer
    found = [
        {"repositoryLocationName": repo["location"]["name"], "repositoryName": repo["name"]}
        for repo in answer["nodes"]
        if SENSOR_NAME in {sensor["name"] for sensor in repo["sensors"]}
    ]
    assert len(found) == 1, answer
    return {**found[0], "sensorName": SENSOR_NAME}


def sensor_state(dev: DagsterDev, selector: dict) -> dict:
    sensor = dev.graphql(SENSOR_QUERY, {"selector": selector})["sensorOrError"]
    assert sensor["__typename"] == "Sensor", sensor
    return sensor["sensorState"]


def start_sensor(dev: DagsterDev, selector: dict) -> dict:
    """What the UI's Start toggle sends; the sensor's state afterwards."""
    started = dev.graphql(START_SENSOR_MUTATION, {"selector": selector})["startSensor"]
    assert started["__typename"] == "Sensor", started
    return started["sensorState"]


def stop_sensor(dev: DagsterDev, state_id: str) -> dict:
    stopped = dev.graphql(STOP_SENSOR_MUTATION, {"id": state_id})["stopSensor"]
    assert stopped["__typename"] == "StopSensorMutationResult", stopped
    return stopped["instigationState"]


def ticks(dev: DagsterDev, selector: dict, limit: int = 500) -> list[dict]:
    """The sensor's ticks, newest first."""
    sensor = dev.graphql(TICKS_QUERY, {"selector": selector, "limit": limit})["sensorOrError"]
    assert sensor["__typename"] == "Sensor", sensor
    return sensor["sensorState"]["ticks"]


@dataclass(frozen=True)
class Run:
    run_id: str
    status: str
    created: float
    start: float | None
    end: float | None
    assets: tuple[str, ...]
    tags: dict[str, str]

    @property
    def is_observation(self) -> bool:
        return bool(self.assets) and all(asset.startswith("archive/") for asset in self.assets)

    @property
    def days(self) -> str:
        tags = self.tags
        if "dagster/asset_partition_range_start" in tags:
            return (
                f"{tags['dagster/asset_partition_range_start']}..{tags['dagster/asset_partition_range_end']}"
            )
        return tags.get("dagster/partition", "-")

    def describe(self) -> str:
        took = f"{self.end - self.start:.0f}s" if self.start and self.end else "-"
        launched = (
            f"backfill {self.tags[BACKFILL_TAG]}"
            if BACKFILL_TAG in self.tags
            else f"sensor {self.tags.get(SENSOR_TAG, '?')}"
        )
        return (
            f"{self.run_id[:8]} {self.status:<8} {took:>5} {time.strftime('%H:%M:%S', time.gmtime(self.created))} "
            f"{launched}, tick {self.tags.get(TICK_TAG, '?')}: {', '.join(self.assets)} [{self.days}]"
        )


def runs(dev: DagsterDev) -> list[Run]:
    answer = dev.graphql(RUNS_QUERY)["runsOrError"]
    assert answer["__typename"] == "Runs", answer
    return [
        Run(
            run_id=r["runId"],
            status=r["status"],
            created=r["creationTime"],
            start=r["startTime"],
            end=r["endTime"],
            assets=tuple("/".join(a["path"]) for a in r["assetSelection"] or []),
            tags={t["key"]: t["value"] for t in r["tags"]},
        )
        for r in answer["results"]
    ]


def backfills(dev: DagsterDev) -> list[dict]:
    answer = dev.graphql(BACKFILLS_QUERY)["partitionBackfillsOrError"]
    assert answer["__typename"] == "PartitionBackfills", answer
    return answer["results"]


def materialized(dev: DagsterDev, asset: list[str], days: list[str]) -> list[dict]:
    """The asset's materializations of `days` (partition, runId, timestamp in seconds)."""
    answer = dev.graphql(MATERIALIZATIONS_QUERY, {"assetKey": {"path": asset}, "partitions": days})
    asset_or_error = answer["assetOrError"]
    if asset_or_error["__typename"] != "Asset":
        return []
    return [{**m, "timestamp": int(m["timestamp"]) / 1000} for m in asset_or_error["assetMaterializations"]]


def days_materialized_after(dev: DagsterDev, asset: list[str], days: list[str], after: float) -> set[str]:
    return {m["partition"] for m in materialized(dev, asset, days) if m["timestamp"] > after}


# --- the live stream -------------------------------------------------------------------------------------


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


def latest_settled_day(spec: StreamSpec, now: datetime) -> date:
    day = now.date() - timedelta(days=1)
    while day_horizon(spec, day) > now:
        day -= timedelta(days=1)
    return day


@pytest.fixture(scope="module")
def refresh_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The data directory of this module's `dagster dev`: the live stream's archive and its lakehouse."""
    return own_data_dir(tmp_path_factory.mktemp("daily_refresh_data"))


@pytest.fixture(scope="module")
def live(refresh_data: Path, tmp_path_factory: pytest.TempPathFactory) -> LiveStream:
    """The demo stream's spec under another name, first day three settled days ago, observed every minute,
    on a small archive generated for those days (and the next, so that it is complete if it settles while
    the test runs); the demo dataset on it."""
    stream = builtin_spec_data("playback")
    playback = StreamSpec.model_validate(stream)
    latest = latest_settled_day(playback, datetime.now(UTC))
    start = latest - timedelta(days=SETTLED_DAYS - 1)
    stream.update(name=STREAM, first_partition=start.isoformat(), archive_observation_cron="* * * * *")
    stream["archive"]["location"] = f"archive/{STREAM}"
    spec = StreamSpec.model_validate(stream)
    dataset = builtin_spec_data("views_per_title")
    dataset.update(name=DATASET, source_stream=STREAM)

    impressions = builtin_spec_data("impressions")
    impressions.update(
        name=IMPRESSIONS_STREAM,
        first_partition=start.isoformat(),
        archive_observation_cron="* * * * *",
        allow_empty_hours=True,  # a few impressions an hour at night: an hour may have none
    )
    impressions["archive"]["location"] = f"archive/{IMPRESSIONS_STREAM}"
    join = builtin_spec_data("attributed_plays")
    join.update(name=JOIN, sources=[STREAM, {"stream": IMPRESSIONS_STREAM, "lookback": "30m"}])
    join["expected_rows"]["source"] = STREAM
    join["versions"] = {"v2": {"transform": "attribution.py:v2"}}

    project = team_project(
        tmp_path_factory.mktemp("daily_refresh_project") / PROJECT,
        {STREAM: stream, DATASET: dataset, IMPRESSIONS_STREAM: impressions, JOIN: join},
    )
    (project / PROJECT / "defs" / JOIN / "attribution.py").write_text(JOIN_TRANSFORM)

    archive = refresh_data / "archive" / STREAM
    config = GeneratorConfig(start=start, days=SETTLED_DAYS + 1, events_per_day=EVENTS_PER_DAY, seed=SEED)
    generate_playback_archive(archive, config)
    impressions_archive = refresh_data / "archive" / IMPRESSIONS_STREAM
    days = [start + timedelta(days=i) for i in range(SETTLED_DAYS)]

    # Settled now: horizon passed and no hole in any read window (a small archive could have an empty hour).
    now = datetime.now(UTC)
    with pytest.MonkeyPatch.context() as patch:  # the archive as the server finds it, in its data directory
        patch.setenv(settings.DATA_DIR_ENV, str(refresh_data))
        archive_files = archive_for(spec)
    files = list_files(archive_files, datetime.combine(start, datetime.min.time(), tzinfo=UTC), now)
    status = completeness(spec, files, [d.isoformat() for d in days], now)
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
    middle, next_day = days[SETTLED_DAYS // 2], days[SETTLED_DAYS // 2] + timedelta(days=1)
    midnight_ms = int(datetime.combine(next_day, datetime.min.time(), tzinfo=UTC).timestamp() * 1000)
    first_plays = [
        play
        for play in playback_starts(archive, spec.allowed_lateness, spec.clock_skew)
        if midnight_ms <= play["_t"] < midnight_ms + 29 * 60_000
    ]
    for seed in range(11, 61):
        generate_impressions_archive(impressions_archive, archive, seed=seed)
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


@pytest.fixture(scope="module")
def refresh_dev(live: LiveStream, refresh_data: Path, tmp_path_factory: pytest.TempPathFactory):
    """A `dagster dev` of this module's own (see the module docstring), on its own data directory."""
    assert os.environ.get("BACKFILL_PLATFORM_AUTOMATION", "stopped").lower() != "running"
    home = tmp_path_factory.mktemp("daily_refresh_dagster_home")
    # The sensor every 10 s instead of the default 30: each step of a chain waits for one tick.
    with dagster_dev_server(
        refresh_data, home, [], {INTERVAL_ENV: str(SENSOR_INTERVAL_SECONDS)}, live.project / "workspace.yaml"
    ) as dev:
        yield dev


def late_hour(live: LiveStream) -> datetime:
    return datetime.combine(live.middle + timedelta(days=1), datetime.min.time(), tzinfo=UTC) + timedelta(
        hours=LATE_HOUR_OF_NEXT_DAY
    )


def write_late_file(live: LiveStream) -> tuple[Path, float]:
    """A few valid 'start' events of the middle day, delivered late in an hour that was already read."""
    hour = late_hour(live)
    events = [
        {
            "event_id": f"late-refresh-{i}",
            "event_time": f"{live.middle.isoformat()}T{LATE_EVENT_HOUR}:{10 * (i + 1):02d}:00.000Z",
            "user_id": "u000001",
            "title_id": LATE_TITLE,
            "event_type": "start",
            "position_sec": 0,
            "device": "web",
        }
        for i in range(LATE_STARTS)
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
        "event_id": LATE_IMPRESSION_ID,
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
    """Polls the server until a condition holds, within the overall deadline; fails with the evidence."""

    def __init__(self, dev: DagsterDev, selector: dict, deadline: float):
        self.dev, self.selector, self.deadline = dev, selector, deadline

    def until(self, what: str, condition: Callable[[], object]) -> object:
        last = None
        while time.monotonic() < self.deadline:
            self.dev.assert_running()
            last = condition()
            if last:
                return last
            time.sleep(POLL_SECONDS)
        pytest.fail(f"timed out waiting for: {what}\n\n{self.evidence()}")

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
                and "/".join(ARCHIVE) in r.assets
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
    """Wait (bounded) for the runs already launched to end; never fails by itself."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(r.status in ACTIVE_RUN_STATUSES for r in runs(dev)):
        time.sleep(POLL_SECONDS)


def promoted_since(dev: DagsterDev, days: list[str], after: float) -> set[str]:
    """The days promoted after `after` in both datasets, the stream's own and the join."""
    return days_materialized_after(dev, PRODUCTION, days, after) & days_materialized_after(
        dev, JOIN_PRODUCTION, days, after
    )


# --- the lakehouse, read back ----------------------------------------------------------------------------


@dataclass(frozen=True)
class DayState:
    promoted_snapshot_id: int
    promotion_run_id: str
    records: int  # archive records attributed to the day, in its latest validation
    rows: dict[tuple, tuple]  # production rows: (hour, title) -> (views, watch_seconds, unique_viewers)


def lake_state(spark, data_dir: Path, live: LiveStream) -> dict[str, DayState]:
    """Each settled day's current promotion (ledger) and production rows, read through a new Spark session
    on the server's lakehouse: the runs are other processes committing to its embedded SQLite catalog."""
    session = lakehouse_session(spark, data_dir)
    production = table_id(session, PROD_NAMESPACE, DATASET)
    session.sql(f"REFRESH TABLE {production}")
    rows = ledger(session, DATASET).where(F.col("partition").isin(live.days)).collect()
    prod_rows = session.table(production).where(F.col("event_date").isin(live.days)).collect()
    state = {}
    for day in live.days:
        mine = [r for r in rows if r["partition"] == day]
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


def join_state(spark, data_dir: Path, live: LiveStream) -> dict[str, tuple[str, str | None]]:
    """The join's production rows of the settled days: play id -> (day, impression id)."""
    session = lakehouse_session(spark, data_dir)
    production = table_id(session, PROD_NAMESPACE, JOIN)
    session.sql(f"REFRESH TABLE {production}")
    rows = session.table(production).where(F.col("play_date").isin(live.days)).collect()
    return {r["play_id"]: (r["play_date"].isoformat(), r["impression_id"]) for r in rows}


def ensure_namespaces(spark, data_dir: Path) -> None:
    """The catalog's namespaces exist before the daemon's first runs. On a fresh catalog, the sensor's first
    tick starts two runs (this stream's and `playback`'s) that both create `raw` at once, and on the
    embedded SQLite catalog one of them can fail with SQLITE_BUSY_SNAPSHOT. (Created through a session of
    this process before any run commits: nothing of this process writes there afterwards.)"""
    session = lakehouse_session(spark, data_dir)
    for namespace in (RAW_NAMESPACE, SHADOW_NAMESPACE, PROD_NAMESPACE, PLATFORM_NAMESPACE):
        session.sql(f"CREATE NAMESPACE IF NOT EXISTS {table_id(session, namespace, 'any').rsplit('.', 1)[0]}")


# --- the test --------------------------------------------------------------------------------------------


def test_a_late_file_repromotes_the_affected_days_with_nobody_clicking(
    live: LiveStream, refresh_dev, refresh_data: Path, spark
):
    dev, days = refresh_dev, live.keys
    selector = sensor_selector(dev)
    assert sensor_state(dev, selector)["status"] == "STOPPED"  # stopped by default

    # The late file's hour, and the days whose read windows hold it: by the automation's own mapping,
    # checked against the hours each day's ingestion reads.
    hour = late_hour(live)
    mapping = ArchiveReadWindowMapping.for_stream(live.spec)
    first, end = mapping.days_window(hour, hour + timedelta(hours=1))
    affected = [d for d in days if first.date() <= date.fromisoformat(d) < end.date()]
    assert affected == [d for d in days if hour in required_hours(live.spec, date.fromisoformat(d))]
    assert live.middle.isoformat() in affected and len(affected) < len(days), affected
    untouched = [d for d in days if d not in affected]

    ensure_namespaces(spark, refresh_data)
    began = time.time()
    state_id = start_sensor(dev, selector)["id"]
    watch = Watch(dev, selector, time.monotonic() + REFRESH_TIMEOUT_SECONDS)
    try:
        assert sensor_state(dev, selector)["status"] == "RUNNING"

        # 1. Every settled day is observed, derived, validated and promoted, unattended.
        watch.until("every settled day promoted", lambda: promoted_since(dev, days, began) >= set(days))
        promoted_at = time.time()
        watch.quiet("the first promotions done")
        before = lake_state(spark, refresh_data, live)
        join_before = join_state(spark, refresh_data, live)

        # 2. A late file in an hour the affected days have read; then only watching.
        late_path, late_written = write_late_file(live)
        watch.until(
            f"days {affected} re-promoted after the late file {late_path.name}",
            lambda: promoted_since(dev, affected, late_written) >= set(affected),
        )
        repromoted_at = max(
            m["timestamp"] for m in materialized(dev, PRODUCTION, affected) if m["timestamp"] > late_written
        )
        watch.quiet("the refresh after the late file done")
    finally:
        stopped = stop_sensor(dev, state_id)
        drain(dev)  # observations already launched end before the server stops (their status is asserted)
    assert stopped["status"] == "STOPPED"
    after = lake_state(spark, refresh_data, live)
    join_after = join_state(spark, refresh_data, live)
    all_runs, all_backfills, sensor_ticks = runs(dev), backfills(dev), ticks(dev, selector)

    # For the closing note, before the assertions: the timings and every run the sensor launched.
    observation = min(
        (
            r.end
            for r in all_runs
            if r.is_observation and "/".join(ARCHIVE) in r.assets and r.end and r.start > late_written
        ),
        default=None,
    )
    print(
        f"\n[daily_refresh] {STREAM}: settled days {days}; late file in ingestion hour {hour:%Y-%m-%d %H}:00 "
        f"({LATE_STARTS} starts of {LATE_TITLE} at {live.middle} {LATE_EVENT_HOUR}h) -> affected {affected}, "
        f"untouched {untouched}"
    )
    print(f"[daily_refresh] sensor started -> all {len(days)} days promoted: {promoted_at - began:.0f}s")
    if observation:
        print(
            f"[daily_refresh] late file written -> first observation after it done: {observation - late_written:.0f}s"
        )
    print(
        f"[daily_refresh] late file written -> affected days re-promoted (production materialized): "
        f"{repromoted_at - late_written:.0f}s"
    )
    print(
        f"[daily_refresh] {len(all_runs)} runs, {len(all_backfills)} backfills, {len(sensor_ticks)} ticks; runs:"
    )
    for run in sorted(all_runs, key=lambda r: r.created):
        if not run.is_observation:
            print(f"  {run.describe()}")
    observations = [r for r in all_runs if r.is_observation]
    print(f"  + {len(observations)} archive observations ({sorted({r.status for r in observations})})")

    # Exactly the affected days were re-derived, re-validated and re-promoted; nothing else of the stream.
    for asset in (*LIVE_MATERIALIZED, IMPRESSIONS, JOIN_SHADOW, JOIN_PRODUCTION):
        assert days_materialized_after(dev, asset, days, late_written) == set(affected), asset
    for day in untouched:
        assert after[day] == before[day], day  # same promotion, same production rows
    for day in affected:
        assert after[day].promoted_snapshot_id != before[day].promoted_snapshot_id, day
    # The middle day now counts the late views; every other row, and the neighbour's rows, are unchanged.
    middle, key = live.middle.isoformat(), (LATE_EVENT_HOUR, LATE_TITLE)
    assert after[middle].records == before[middle].records + LATE_STARTS
    assert after[middle].rows[key][0] == before[middle].rows.get(key, (0,))[0] + LATE_STARTS
    assert {k: v for k, v in after[middle].rows.items() if k != key} == {
        k: v for k, v in before[middle].rows.items() if k != key
    }
    neighbours = [day for day in affected if day != middle]
    assert neighbours, affected  # the late hour is read by the middle day and the next
    for day in neighbours:
        assert (after[day].rows, after[day].records) == (before[day].rows, before[day].records), day

    # The join: the middle day gained the late plays; the next day's first play is now led by the late
    # impression of the middle day's last second (read through the lookback); the first day is untouched.
    play_id = live.late_play["event_id"]
    late_plays = {p for p, (day, _) in join_after.items() if p.startswith("late-refresh-")}
    assert {join_after[p][0] for p in late_plays} == {middle} and len(late_plays) == LATE_STARTS
    assert join_before[play_id][1] != LATE_IMPRESSION_ID and join_after[play_id][1] == LATE_IMPRESSION_ID
    changed = {p for p in set(join_before) | set(join_after) if join_before.get(p) != join_after.get(p)}
    assert changed == late_plays | {play_id}, sorted(changed)[:10]

    # Nobody clicked: every backfill and run of this instance was launched by the sensor, on one of its ticks.
    tick_ids = {tick["tickId"] for tick in sensor_ticks}
    launched = {run_id for tick in sensor_ticks for run_id in tick["runIds"]}
    for backfill in all_backfills:
        tags = {t["key"]: t["value"] for t in backfill["tags"]}
        assert backfill["id"] in launched, backfill
        assert (tags.get(SENSOR_TAG), tags.get(AUTOMATION_TAG), tags.get(TICK_TAG) in tick_ids) == (
            SENSOR_NAME,
            "true",
            True,
        ), backfill
    backfill_ids = {b["id"] for b in all_backfills}
    for run in all_runs:
        assert (
            run.tags.get(SENSOR_TAG),
            run.tags.get(AUTOMATION_TAG),
            run.tags.get(TICK_TAG) in tick_ids,
        ) == (
            SENSOR_NAME,
            "true",
            True,
        ), run
        assert (
            run.tags.get(BACKFILL_TAG) in backfill_ids if BACKFILL_TAG in run.tags else run.run_id in launched
        )
    # Every run of the live stream succeeded (the other streams' missing days fail, as a lost archive must).
    live_runs = [
        r
        for r in all_runs
        if any(a.split("/", 1)[1].startswith((STREAM, DATASET, IMPRESSIONS_STREAM, JOIN)) for a in r.assets)
    ]
    assert live_runs and all(r.status == "SUCCESS" for r in live_runs), [r.describe() for r in live_runs]
