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
from datetime import UTC, date, datetime, timedelta
from datetime import time as dt_time
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from pyspark.sql import functions as F

from backfill_platform.components.registry import demo_spec_data
from backfill_platform.lakehouse.tables import PROD_NAMESPACE, table_id
from backfill_platform.orchestration.automation.sensor import INTERVAL_ENV, SENSOR_NAME
from backfill_platform.pipeline.hour_mapping import ArchiveReadWindowMapping, ReadPlan
from backfill_platform.pipeline.partitions import HOUR_KEY
from backfill_platform.specs.stream import StreamSpec
from backfill_platform_tests.support.dagster_dev import dagster_dev_server
from backfill_platform_tests.support.dagster_graphql import (
    AUTOMATION_TAG,
    BACKFILL_TAG,
    SENSOR_TAG,
    TICK_TAG,
    backfills,
    days_materialized_after,
    materialized_at,
    runs,
    sensor_selector,
    sensor_state,
    start_sensor,
    stop_sensor,
    ticks,
)
from backfill_platform_tests.support.daily_refresh import (
    LiveStream,
    Watch,
    drain,
    ensure_namespaces,
    join_state,
    lake_state,
    latest_settled_day,
    live_archives,
    promoted_since,
    team_project,
    write_late_files,
)
from backfill_platform_tests.support.datasets import production
from backfill_platform_tests.support.lakehouse import lakehouse_session, own_data_dir

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
# Each tick evaluates every asset's condition (~1.4 CPU-s in the code server here, mostly Dagster's event
# log queries): 10 s halves that against 5 s, and adds ~5 s to each of the four steps, which wait ~30 s for
# the backfill daemon anyway.
SENSOR_INTERVAL_SECONDS = 10

ARCHIVE = ["archive", f"{STREAM}_archive"]
EVENTS = ["raw", f"{STREAM}_events"]
SHADOW = ["shadow", f"{DATASET}__v2"]
PRODUCTION = production(DATASET).path
LIVE_MATERIALIZED = (EVENTS, SHADOW, PRODUCTION)
IMPRESSIONS_STREAM = "impressions_live"
JOIN = "attributed_live"
IMPRESSIONS = ["raw", f"{IMPRESSIONS_STREAM}_events"]
JOIN_SHADOW = ["shadow", f"{JOIN}__v2"]
JOIN_PRODUCTION = production(JOIN).path
PRODUCTIONS = (PRODUCTION, JOIN_PRODUCTION)  # a day is promoted once promoted in both datasets
LATE_IMPRESSION_ID = "late-impression-0"
# The join's transform, beside its spec (transforms resolve beside the spec file): the demo's v2 with the
# sources named as this test's streams.
JOIN_TRANSFORM = f"""
from backfill_platform.defs.attributed_plays.transform import attributed_v2


def v2({STREAM}, {IMPRESSIONS_STREAM}):
    return attributed_v2({STREAM}, {IMPRESSIONS_STREAM})
"""

# The hourly copy of the stream and the New York days rolled up from its hours (the shipped `plays_new_york`):
# a local-day dataset in the code location, whose mapping Dagster's daemon cannot compute across zones.
HOURLY_STREAM = "playback_hourly_live"
NEW_YORK = "plays_new_york_live"
HOURLY_EVENTS = ["raw", f"{HOURLY_STREAM}_events"]
HOURLY_ARCHIVE = ["archive", f"{HOURLY_STREAM}_archive"]
NEW_YORK_PRODUCTION = production(NEW_YORK).path
# Its late file: starts at 15:xx UTC of the middle day, delivered in its ingestion hour 20:00 (5 hours late,
# within the 8 hours allowed). The hours whose read windows hold 20:00 (11:00-21:00 UTC) all lie in the
# middle day's New York day (05:00 UTC to 05:00 UTC the next day, standard time): one local day re-derived.
HOURLY_LATE_INGESTION_HOUR = 20
HOURLY_LATE_EVENT_HOUR = 15
HOURLY_LATE_PLAYS = "late-hourly-"

LATE_TITLE = "t0001"
LATE_STARTS = 3
LATE_PLAYS = "late-refresh-"  # the late plays' event ids: this and a number
LATE_HOUR_OF_NEXT_DAY = 5  # the file's ingestion hour: 05:00 the day after the middle day
LATE_EVENT_HOUR = 23  # the late events' event-time hour on the middle day


# --- the live streams, in a team's project served by a `dagster dev` of its own ---------------------------


@pytest.fixture(scope="module")
def refresh_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The data directory of this module's `dagster dev`: the live stream's archive and its lakehouse."""
    return own_data_dir(tmp_path_factory.mktemp("daily_refresh_data"))


@pytest.fixture(scope="module")
def live(refresh_data: Path, tmp_path_factory: pytest.TempPathFactory) -> LiveStream:
    """The demo stream's spec under another name, first day three settled days ago, observed every minute,
    on a small archive generated for those days (and the next, so that it is complete if it settles while
    the test runs); the demo dataset on it; the impressions stream beside it and the join of both."""
    stream = demo_spec_data("playback")
    playback = StreamSpec.model_validate(stream)
    latest = latest_settled_day(playback, datetime.now(UTC))
    start = latest - timedelta(days=SETTLED_DAYS - 1)
    stream.update(name=STREAM, first_partition=start.isoformat(), archive_observation_cron="* * * * *")
    stream["archive"]["location"] = f"archive/{STREAM}"
    spec = StreamSpec.model_validate(stream)
    dataset = demo_spec_data("views_per_title")
    dataset.update(name=DATASET, source_stream=STREAM)

    impressions = demo_spec_data("impressions")
    impressions.update(
        name=IMPRESSIONS_STREAM,
        first_partition=start.isoformat(),
        archive_observation_cron="* * * * *",
        allow_empty_hours=True,  # a few impressions an hour at night: an hour may have none
    )
    impressions["archive"]["location"] = f"archive/{IMPRESSIONS_STREAM}"
    join = demo_spec_data("attributed_plays")
    join.update(name=JOIN, sources=[STREAM, {"stream": IMPRESSIONS_STREAM, "lookback": "30m"}])
    join["expected_rows"]["source"] = STREAM
    join["versions"] = {"v2": {"transform": "attribution.py:v2"}}

    # The shipped hourly stream and its New York days, on a copy of the same archive (its own late file).
    hourly = hourly_stream_data(start)
    new_york = demo_spec_data("plays_new_york")
    new_york.update(name=NEW_YORK, source_stream=HOURLY_STREAM)

    project = team_project(
        tmp_path_factory.mktemp("daily_refresh_project") / PROJECT,
        {
            STREAM: stream,
            DATASET: dataset,
            IMPRESSIONS_STREAM: impressions,
            JOIN: join,
            HOURLY_STREAM: hourly,
            NEW_YORK: new_york,
        },
    )
    (project / PROJECT / "defs" / JOIN / "attribution.py").write_text(JOIN_TRANSFORM)
    streams = live_archives(
        refresh_data, spec, IMPRESSIONS_STREAM, project, SETTLED_DAYS, EVENTS_PER_DAY, SEED
    )
    shutil.copytree(streams.archive, refresh_data / "archive" / HOURLY_STREAM)
    return streams


@pytest.fixture(scope="module")
def refresh_dev(live: LiveStream, refresh_data: Path, tmp_path_factory: pytest.TempPathFactory):
    """A `dagster dev` of this module's own (see the module docstring), on its own data directory."""
    assert os.environ.get("BACKFILL_PLATFORM_AUTOMATION", "stopped").lower() != "running"
    home = tmp_path_factory.mktemp("daily_refresh_dagster_home")
    # The sensor every 10 s instead of the default 30: each step of a chain waits for one tick.
    with dagster_dev_server(
        refresh_data, home, live.project / "workspace.yaml", {INTERVAL_ENV: str(SENSOR_INTERVAL_SECONDS)}
    ) as dev:
        yield dev


# --- the test --------------------------------------------------------------------------------------------


def test_a_late_file_repromotes_the_affected_days_with_nobody_clicking(
    live: LiveStream, refresh_dev, refresh_data: Path, spark
):
    dev, days = refresh_dev, live.keys
    selector = sensor_selector(dev, SENSOR_NAME)
    assert sensor_state(dev, selector)["status"] == "STOPPED"  # stopped by default

    # The late file's hour, and the days whose read windows hold it: by the automation's own mapping,
    # checked against the hours each day's ingestion reads.
    hour = live.next_day_hour(LATE_HOUR_OF_NEXT_DAY)
    mapping = ArchiveReadWindowMapping.for_stream(live.spec)
    first, end = mapping.days_window(hour, hour + timedelta(hours=1))
    affected = [d for d in days if first.date() <= date.fromisoformat(d) < end.date()]
    assert affected == [d for d in days if hour in ReadPlan.for_partitions(live.spec, [d]).required_hours(d)]
    assert live.middle.isoformat() in affected and len(affected) < len(days), affected
    untouched = [d for d in days if d not in affected]
    # The hourly copy's late file: the hours whose read windows hold its ingestion hour (the automation's
    # own mapping), all of them in the middle day's New York day.
    hourly_spec = StreamSpec.model_validate(hourly_stream_data(live.days[0]))
    late_hour = datetime.combine(live.middle, dt_time(HOURLY_LATE_INGESTION_HOUR), tzinfo=UTC)
    first_hour, end_hour = ArchiveReadWindowMapping.for_stream(hourly_spec).days_window(
        late_hour, late_hour + timedelta(hours=1)
    )
    affected_hours = hour_keys(first_hour, end_hour)
    assert {new_york_day(key) for key in affected_hours} == {live.middle.isoformat()}, affected_hours
    all_hours = hour_keys(
        datetime.combine(live.days[0], dt_time(), tzinfo=UTC), late_hour + timedelta(days=1)
    )
    # New York days certainly settled now: the first two (the third ends at 05:00 UTC the day after it).
    new_york_days = days[:2]

    ensure_namespaces(spark, refresh_data)
    began = time.time()
    state_id = start_sensor(dev, selector)["id"]
    watch = Watch(dev, selector, time.monotonic() + REFRESH_TIMEOUT_SECONDS, ARCHIVE)
    try:
        assert sensor_state(dev, selector)["status"] == "RUNNING"

        # 1. Every settled day is observed, derived, validated and promoted, unattended.
        watch.until(
            "every settled day promoted, and the New York days of the hourly stream",
            lambda: (
                promoted_since(dev, PRODUCTIONS, days, began) >= set(days)
                and promoted_since(dev, [NEW_YORK_PRODUCTION], new_york_days, began) >= set(new_york_days)
            ),
        )
        promoted_at = time.time()
        watch.quiet("the first promotions done")
        before = lake_state(spark, refresh_data, DATASET, live.days)
        join_before = join_state(spark, refresh_data, JOIN, live.days)
        new_york_before = plays_per_day(spark, refresh_data, NEW_YORK, new_york_days)
        hourly_late_written = write_hourly_late_file(
            refresh_data / "archive" / HOURLY_STREAM, hourly_spec, late_hour, live.middle
        )

        # 2. A late file in an hour the affected days have read; then only watching.
        late_path, late_written = write_late_files(
            live,
            hour,
            title=LATE_TITLE,
            starts=LATE_STARTS,
            event_hour=LATE_EVENT_HOUR,
            play_ids=LATE_PLAYS,
            impression_id=LATE_IMPRESSION_ID,
        )
        watch.until(
            f"days {affected} re-promoted after the late file {late_path.name}, and New York {live.middle} "
            "after the hourly one",
            lambda: (
                promoted_since(dev, PRODUCTIONS, affected, late_written) >= set(affected)
                and promoted_since(dev, [NEW_YORK_PRODUCTION], [live.middle.isoformat()], hourly_late_written)
            ),
        )
        new_york_repromoted_at = max(
            m["timestamp"]
            for m in materialized_at(dev, NEW_YORK_PRODUCTION, [live.middle.isoformat()])
            if m["timestamp"] > hourly_late_written
        )
        repromoted_at = max(
            m["timestamp"]
            for m in materialized_at(dev, PRODUCTION, affected)
            if m["timestamp"] > late_written
        )
        watch.quiet("the refresh after the late file done")
    finally:
        stopped = stop_sensor(dev, state_id)
        drain(dev)  # observations already launched end before the server stops (their status is asserted)
    assert stopped["status"] == "STOPPED"
    after = lake_state(spark, refresh_data, DATASET, live.days)
    join_after = join_state(spark, refresh_data, JOIN, live.days)
    new_york_after = plays_per_day(spark, refresh_data, NEW_YORK, new_york_days)
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
        f"[daily_refresh] hourly late file written (ingestion hour {late_hour:%Y-%m-%d %H}:00) -> New York "
        f"{live.middle} re-promoted: {new_york_repromoted_at - hourly_late_written:.0f}s"
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
    late_plays = {p for p, (day, _) in join_after.items() if p.startswith(LATE_PLAYS)}
    assert {join_after[p][0] for p in late_plays} == {middle} and len(late_plays) == LATE_STARTS
    assert join_before[play_id][1] != LATE_IMPRESSION_ID and join_after[play_id][1] == LATE_IMPRESSION_ID
    changed = {p for p in set(join_before) | set(join_after) if join_before.get(p) != join_after.get(p)}
    assert changed == late_plays | {play_id}, sorted(changed)[:10]

    # The hourly late file re-derived exactly the hours whose windows hold its ingestion hour, then the New
    # York day holding them; that day counts the late plays, every other row and day is unchanged.
    assert days_materialized_after(dev, HOURLY_EVENTS, all_hours, hourly_late_written) == set(affected_hours)
    for asset in (["shadow", f"{NEW_YORK}__v1"], NEW_YORK_PRODUCTION):
        assert days_materialized_after(dev, asset, days, hourly_late_written) == {middle}, asset
    late_key = (middle, LATE_TITLE)
    assert new_york_after[late_key] == new_york_before.get(late_key, 0) + LATE_STARTS
    assert {k: v for k, v in new_york_after.items() if k != late_key} == {
        k: v for k, v in new_york_before.items() if k != late_key
    }

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
    # Nothing failed: every run and every backfill of the instance succeeded (Dagster's backfill daemon maps
    # the hourly stream's partitions to the New York days' through what the snapshot holds, see
    # `LocalDaysMapping`).
    assert all_runs and all(r.status == "SUCCESS" for r in all_runs), [r.describe() for r in all_runs]
    assert all(b["status"] == "COMPLETED_SUCCESS" for b in all_backfills), all_backfills


# --- the hourly copy and its New York days -------------------------------------------------------------


def hourly_stream_data(first: date) -> dict:
    """The shipped hourly stream as the team declares it: from `first`, observed every minute, on its copy of
    the live archive."""
    hourly = demo_spec_data("playback_hourly")
    hourly.update(name=HOURLY_STREAM, first_partition=first.isoformat(), archive_observation_cron="* * * * *")
    hourly["archive"]["location"] = f"archive/{HOURLY_STREAM}"
    return hourly


def hour_keys(start: datetime, end: datetime) -> list[str]:
    """The keys of the UTC hours in [start, end)."""
    count = int((end - start) / timedelta(hours=1))
    return [(start + timedelta(hours=i)).strftime(HOUR_KEY) for i in range(count)]


def new_york_day(hour_key: str) -> str:
    """The New York day holding the UTC hour `hour_key` (its start)."""
    start = datetime.strptime(hour_key, HOUR_KEY).replace(tzinfo=UTC)
    return start.astimezone(ZoneInfo(new_york_zone())).date().isoformat()


def new_york_zone() -> str:
    return demo_spec_data("plays_new_york")["partition_timezone"]


def write_hourly_late_file(archive: Path, spec: StreamSpec, hour: datetime, day: date) -> float:
    """`LATE_STARTS` starts of `LATE_TITLE` at `HOURLY_LATE_EVENT_HOUR`:xx of `day`, delivered late in the
    ingestion hour `hour` (already read); when it was written."""
    events = [
        {
            "event_id": f"{HOURLY_LATE_PLAYS}{i}",
            "event_time": f"{day.isoformat()}T{HOURLY_LATE_EVENT_HOUR}:{10 * (i + 1):02d}:00.000Z",
            "user_id": "u000001",
            "title_id": LATE_TITLE,
            "event_type": "start",
            "position_sec": 0,
            "device": "web",
        }
        for i in range(LATE_STARTS)
    ]
    folder = archive / hour.strftime(spec.archive.layout)
    assert folder.is_dir(), f"{folder}: the hour must have been archived (and read) already"
    path = folder / f"playback-{hour:%Y-%m-%d-%H}-late-0003.jsonl.gz"
    partial = folder / f".{path.name}.partial"  # not an archive file name: never listed half-written
    partial.write_bytes(gzip.compress("".join(json.dumps(e) + "\n" for e in events).encode()))
    os.replace(partial, path)
    return time.time()


def plays_per_day(spark, data_dir: Path, dataset: str, days: list[str]) -> dict[tuple[str, str], int]:
    """(New York day, title) -> plays in `dataset`'s production, read through a Spark session of the server's
    lakehouse."""
    session = lakehouse_session(spark, data_dir)
    table = table_id(session, PROD_NAMESPACE, dataset)
    session.sql(f"REFRESH TABLE {table}")
    rows = session.table(table).where(F.col("event_date").isin(days)).collect()
    return {(r["event_date"].isoformat(), r["title_id"]): r["plays"] for r in rows}
