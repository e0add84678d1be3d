"""Faults a team will meet, each with nothing lost: killed runs and overlapping backfills.

Every backfill here is `dagster asset materialize` in its own process, lakehouse and Dagster instance,
over a copy of the session's generated archive, as a user runs it from the command line (no daemon).

- Two overlapping backfills of the same range at once: the embedded tier's catalog takes one writer,
  so the second run waits and says for whom; both succeed, and production, events, quarantine and
  the ledger agree afterwards. Its final state is the clean run the fault chain is compared with.
- A promotion blocked by a (fake) run holding its pool slot, in a lakehouse of its own, names that run and
  goes on once `runs --reap` has failed it.
- The fault chain, in one lakehouse: a run SIGKILLed (a) between the events and the quarantine
  commits, the next (b) between the shadow write and its checks, the next (c) between the production
  commit and the ledger write, then the same backfill once more. Each run finds the dead one before
  it, fails it and frees its pool slots; production never shows a partial range; at the end
  production, events, quarantine and the ledger's current rows equal the clean run's. The chain runs
  twice: on the embedded tier, and on the team tier's lakehouse (Iceberg's REST catalog server, the
  warehouse in moto's S3), where no catalog lock exists and commits are the REST server's.
Tables are read back with PyIceberg (each lakehouse is its own catalog), runs from each instance.
"""

from __future__ import annotations

import itertools
import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import psutil
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from dagster import AssetKey, DagsterEventType, DagsterInstance, DagsterRun, DagsterRunStatus
from dagster._core.utils import make_new_run_id

from backfill_platform import settings
from backfill_platform.faults import (
    EVENTS_BEFORE_QUARANTINE,
    FAILPOINTS_ENV,
    PROMOTION_BEFORE_LEDGER,
    SHADOW_BEFORE_CHECKS,
)
from backfill_platform.lakehouse.resources import catalog_from_env
from backfill_platform.orchestration.dagster_home import write_dagster_home
from backfill_platform.orchestration.runs.catalog_lock import lock_path_for
from backfill_platform.orchestration.runs.workers import WORKER_TAG, RunWorker
from backfill_platform.pipeline.ledger.commits import DAYS, parse_day_list
from backfill_platform.pipeline.ledger.latest import latest_key
from backfill_platform_tests.support.lakehouse import catalog_of, own_data_dir
from backfill_platform_tests.support.processes import kill, wait_until
from backfill_platform_tests.support.session import DAGSTER_CLI, REPO_ROOT

pytestmark = [pytest.mark.other_writers, pytest.mark.long_running(minutes=9)]

RANGE = ["2026-10-01", "2026-10-02", "2026-10-03"]
SELECTION = "raw/playback_events,shadow/views_per_title__v2,prod/views_per_title_production"
POOLS = ["ingest_playback", "promote_views_per_title"]
KILLED = -9
RUN_TIMEOUT_SECONDS = 600
# From a backfill's start until its run holds the embedded catalog's writer lock (a JVM start and more).
LOCK_TIMEOUT_SECONDS = 300
# Run monitoring polls every 15 s (dagster.yaml); slots are freed 5 s after the run ended.
MONITORING_TIMEOUT_SECONDS = 120
# Ledger columns a rerun must reproduce (ids, snapshot ids and times differ by construction).
LEDGER_FIGURES = [
    "records",
    "events_written",
    "duplicates",
    "quarantined",
    "late",
    "shadow_rows",
    "shadow_row_hash",
    "checks_passed",
    "events_rows",
    "events_row_hash",
]


class Lakehouse:
    """One data directory (with a copy of the session's archive) and one Dagster instance; its catalog
    the embedded one of that directory, or the one `tier` (environment variables) names."""

    def __init__(self, root: Path, archive: Path, tier: Mapping[str, str] | None = None) -> None:
        self.data = own_data_dir(root / "data", archive)
        self.home = root / "dagster_home"
        self.home.mkdir()
        write_dagster_home(self.home)
        self.tier = dict(tier or {})

    def start(self, failpoint: str | None = None) -> subprocess.Popen:
        env = {
            **os.environ,
            settings.DATA_DIR_ENV: str(self.data),
            "DAGSTER_HOME": str(self.home),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "DAGSTER_DISABLE_TELEMETRY": "1",
            FAILPOINTS_ENV: failpoint or "",
            **self.tier,
        }
        command = [
            str(DAGSTER_CLI),
            *("asset", "materialize", "-m", "backfill_platform.definitions"),
            *("--select", SELECTION, "--partition-range", f"{RANGE[0]}...{RANGE[-1]}"),
        ]
        with (self.home / f"cli-{time.monotonic_ns()}.log").open("w") as log:
            return subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)

    def run(self, failpoint: str | None = None) -> int:
        return wait(self.start(failpoint))

    def instance(self) -> DagsterInstance:
        return DagsterInstance.from_config(str(self.home))

    def catalog(self):
        if not self.tier:
            return catalog_of(self.data).load()
        with pytest.MonkeyPatch.context() as patch:
            for name, value in self.tier.items():
                patch.setenv(name, value)
            return catalog_from_env(for_dagster=False).load()

    def catalog_writer(self) -> str | None:
        """The run holding the catalog's writer lock now, as its lock file names it (None: nobody yet)."""
        path = lock_path_for(catalog_of(self.data).jdbc_uri)
        try:
            return json.loads(path.read_text() or "{}").get("run")
        except (OSError, ValueError):
            return None

    def table(self, identifier: str) -> pa.Table:
        # S3 data files are read with the credentials of the default chain, the tier's variables.
        with pytest.MonkeyPatch.context() as patch:
            for name, value in self.tier.items():
                patch.setenv(name, value)
            return self.catalog().load_table(identifier).scan().to_arrow()

    def exists(self, identifier: str) -> bool:
        return self.catalog().table_exists(identifier)


def wait(process: subprocess.Popen) -> int:
    """The backfill's exit code; one still running after RUN_TIMEOUT_SECONDS is killed (and fails)."""
    try:
        return process.wait(timeout=RUN_TIMEOUT_SECONDS)
    finally:
        kill(process)


@contextmanager
def stopped_at_exit(*processes: subprocess.Popen) -> Iterator[None]:
    """Kill whatever of `processes` is still running when the block ends, however it ends."""
    try:
        yield
    finally:
        for process in processes:
            kill(process)


def sorted_rows(table: pa.Table, *drop: str) -> list[dict]:
    table = table.drop_columns([c for c in drop if c in table.column_names])
    rows = table.to_pylist()
    return sorted(rows, key=repr)


def current_ledger(lakehouse: Lakehouse) -> dict[str, dict]:
    """The ledger's latest row per day of views_per_title v2: what the audit trail says now."""
    rows = lakehouse.table("platform.ledger").to_pylist()
    latest: dict[str, dict] = {}
    for row in sorted(rows, key=latest_key):
        if row["dataset"] == "views_per_title" and row["version"] == "v2":
            latest[row["partition_date"].isoformat()] = row
    return latest


def production_snapshots(lakehouse: Lakehouse) -> list:
    return lakehouse.catalog().load_table("prod.views_per_title").snapshots()


def runs_by_start(instance: DagsterInstance) -> list:
    return sorted(
        instance.get_runs(), key=lambda run: instance.get_run_record_by_id(run.run_id).create_timestamp
    )


def engine_messages(instance: DagsterInstance, run_id: str) -> list[str]:
    return [
        entry.dagster_event.message or ""
        for entry in instance.all_logs(run_id, of_type=DagsterEventType.ENGINE_EVENT)
    ]


def failure_message(instance: DagsterInstance, run_id: str) -> str:
    entries = instance.all_logs(run_id, of_type=DagsterEventType.RUN_FAILURE)
    return " ".join(entry.dagster_event.message or "" for entry in entries)


def assert_no_slot_held(instance: DagsterInstance) -> None:
    for pool in POOLS:
        info = instance.event_log_storage.get_concurrency_info(pool)
        assert info.claimed_slots == [] and info.pending_steps == [], (pool, info)


@pytest.fixture(scope="module")
def overlapping(playback_archive: Path, tmp_path_factory: pytest.TempPathFactory) -> Lakehouse:
    """Two backfills of the same range started at once; both must succeed."""
    lakehouse = Lakehouse(tmp_path_factory.mktemp("overlapping"), playback_archive)
    first = lakehouse.start()
    with stopped_at_exit(first):
        # The first takes the catalog before the second starts: the test asserts who waited for whom.
        wait_until(
            lakehouse.catalog_writer,
            timeout=LOCK_TIMEOUT_SECONDS,
            what="the first backfill holds the catalog",
            process=first,
        )
        second = lakehouse.start()
        with stopped_at_exit(second):
            assert (wait(first), wait(second)) == (0, 0)
    return lakehouse


def rest_and_s3(request: pytest.FixtureRequest) -> dict[str, str]:
    """The team tier's lakehouse settings: this module's REST catalog server, its warehouse in moto's S3."""
    rest_catalog = request.getfixturevalue("rest_catalog")
    moto = request.getfixturevalue("moto")
    return {
        **moto.env(),
        settings.CATALOG_URI_ENV: rest_catalog.uri,
        settings.WAREHOUSE_ENV: rest_catalog.warehouse,
    }


@pytest.fixture(scope="module", params=["embedded", "rest_s3"])
def chain(
    request: pytest.FixtureRequest, playback_archive: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict:
    """Kill (a), (b), (c) in turn, reading the state each kill left; then the repairing run."""
    tier = rest_and_s3(request) if request.param == "rest_s3" else None
    lakehouse = Lakehouse(tmp_path_factory.mktemp(f"faults_{request.param}"), playback_archive, tier)
    seen: dict = {"lakehouse": lakehouse}

    assert lakehouse.run(EVENTS_BEFORE_QUARANTINE) == KILLED
    instance = lakehouse.instance()
    (dead,) = instance.get_runs()
    seen["a"] = {
        "status": dead.status,
        "slots": instance.event_log_storage.get_concurrency_info("ingest_playback").claimed_slots,
        "events": lakehouse.table("raw.playback_events").num_rows,
        "quarantine": lakehouse.table("raw.playback_quarantine").num_rows,
        "production": lakehouse.exists("prod.views_per_title"),
    }

    assert lakehouse.run(SHADOW_BEFORE_CHECKS) == KILLED
    seen["b"] = {
        "shadow": lakehouse.table("shadow.views_per_title__v2").num_rows,
        "validated": lakehouse.exists("platform.ledger") and len(current_ledger(lakehouse)),
        "production": lakehouse.exists("prod.views_per_title"),
    }

    assert lakehouse.run(PROMOTION_BEFORE_LEDGER) == KILLED
    seen["c"] = {
        "production": lakehouse.table("prod.views_per_title"),
        "ledger": current_ledger(lakehouse),
        "materialized": lakehouse.instance()
        .fetch_materializations(AssetKey(["prod", "views_per_title_production"]), limit=10)
        .records,
    }

    assert lakehouse.run() == 0
    return seen


def test_the_second_of_two_overlapping_backfills_waits_and_says_for_whom(overlapping):
    instance = overlapping.instance()
    first, second = runs_by_start(instance)
    assert first.status == second.status == DagsterRunStatus.SUCCESS
    waits = [m for m in engine_messages(instance, second.run_id) if "waiting for the embedded catalog" in m]
    assert waits and f"run {first.run_id}" in waits[0], engine_messages(instance, second.run_id)
    assert_no_slot_held(instance)


def test_overlapping_backfills_leave_ledger_and_production_agreeing(overlapping):
    production = overlapping.catalog().load_table("prod.views_per_title")
    current = production.current_snapshot().snapshot_id
    ledger = current_ledger(overlapping)
    assert sorted(ledger) == RANGE
    assert {row["promoted_snapshot_id"] for row in ledger.values()} == {current}
    # Both promotions replaced the whole range; the table holds each day once.
    rows = production.scan().to_arrow()
    assert sorted(set(d.isoformat() for d in rows["event_date"].to_pylist())) == RANGE
    key_columns = ["event_date", "event_hour", "title_id"]
    keys = [tuple(r.values()) for r in rows.select(key_columns).to_pylist()]
    assert len(keys) == len(set(keys))


def test_events_and_quarantine_of_each_window_come_from_the_same_run(overlapping):
    catalog = overlapping.catalog()
    writers = {
        name: catalog.load_table(f"raw.playback_{name}").current_snapshot().summary["dagster.run-id"]
        for name in ("events", "quarantine")
    }
    assert writers["events"] == writers["quarantine"]


def test_a_run_killed_between_events_and_quarantine_stays_invisible(chain):
    seen = chain["a"]
    # The dead run holds its pool slot until the next run finds it; nothing downstream was written.
    assert seen["status"] == DagsterRunStatus.STARTED and len(seen["slots"]) == 1
    assert seen["events"] > 0 and seen["quarantine"] == 0
    assert seen["production"] is False


def test_a_run_killed_before_its_checks_published_nothing(chain):
    seen = chain["b"]
    assert seen["shadow"] > 0
    assert not seen["validated"]
    assert seen["production"] is False


def test_a_run_killed_after_the_production_commit_published_the_whole_range(chain, overlapping):
    seen = chain["c"]
    days = sorted({d.isoformat() for d in seen["production"]["event_date"].to_pylist()})
    assert days == RANGE
    assert sorted_rows(seen["production"]) == sorted_rows(overlapping.table("prod.views_per_title"))
    # The ledger did not hear of it yet, and the UI shows no production materialization from it.
    assert seen["ledger"] and all(row["promoted_snapshot_id"] is None for row in seen["ledger"].values())
    assert seen["materialized"] == []


def test_each_killed_run_is_failed_by_the_next_and_frees_its_slots(chain):
    instance = chain["lakehouse"].instance()
    runs = runs_by_start(instance)
    assert [run.status for run in runs] == [DagsterRunStatus.FAILURE] * 3 + [DagsterRunStatus.SUCCESS]
    for dead, finder in itertools.pairwise(runs):
        worker = dead.tags[WORKER_TAG].split(" ")[1]
        message = failure_message(instance, dead.run_id)
        assert f"pid {worker}" in message and "is gone" in message, message
        assert f"run {finder.run_id} at its start" in message, message
    assert_no_slot_held(instance)


def test_production_never_showed_a_partial_range(chain):
    snapshots = production_snapshots(chain["lakehouse"])
    assert snapshots  # the killed run (c) and the repairing run promoted
    for snapshot in snapshots:
        assert snapshot.summary[DAYS] == "2026-10-01..2026-10-03", snapshot  # three days, one range
        assert parse_day_list(snapshot.summary[DAYS]) == RANGE


def test_after_the_repair_everything_equals_a_clean_run(chain, overlapping):
    repaired = chain["lakehouse"]
    for identifier, drop in (
        ("prod.views_per_title", ()),
        ("raw.playback_events", ()),
        ("raw.playback_quarantine", ()),
    ):
        assert sorted_rows(repaired.table(identifier), *drop) == sorted_rows(
            overlapping.table(identifier), *drop
        ), identifier
    ledger, clean = current_ledger(repaired), current_ledger(overlapping)
    assert sorted(ledger) == sorted(clean) == RANGE
    for day in RANGE:
        assert {f: ledger[day][f] for f in LEDGER_FIGURES} == {f: clean[day][f] for f in LEDGER_FIGURES}
    current = repaired.catalog().load_table("prod.views_per_title").current_snapshot().snapshot_id
    assert {row["promoted_snapshot_id"] for row in ledger.values()} == {current}
    # The repairing run's verdicts cover every day.
    assert pc.all(pa.array([row["checks_passed"] for row in ledger.values()])).as_py()


def sleeper() -> tuple[subprocess.Popen, RunWorker]:
    """A live process on this host and the worker record a run of it would carry."""
    process = subprocess.Popen(["sleep", "600"])
    try:
        started = psutil.Process(process.pid).create_time()
    except BaseException:
        kill(process)
        raise
    return process, RunWorker(host=socket.gethostname(), pid=process.pid, started=started)


def fake_started_run(instance: DagsterInstance, worker: RunWorker, pool: str) -> DagsterRun:
    """A STARTED run holding a slot of `pool`, as a run of `worker` that is still promoting would."""
    run = instance.add_run(
        DagsterRun(
            job_name="__ASSET_JOB",
            run_id=make_new_run_id(),
            status=DagsterRunStatus.STARTED,
            tags={WORKER_TAG: worker.tag_value()},
        )
    )
    instance.event_log_storage.initialize_concurrency_limit_to_default(pool)
    instance.event_log_storage.claim_concurrency_slot(pool, run.run_id, "prod__views_per_title_production")
    assert [s.run_id for s in instance.event_log_storage.get_concurrency_info(pool).claimed_slots] == [
        run.run_id
    ]
    return run


def test_run_monitoring_fails_a_dead_run_and_frees_its_slot(dagster_dev):
    """The daemon's run monitoring, through the launcher's worker check, fails a run whose worker died
    (here: a STARTED run recorded with the worker of a process killed meanwhile) and frees its slot."""
    instance = DagsterInstance.from_config(str(dagster_dev.dagster_home))
    victim, worker = sleeper()
    kill(victim)
    pool = "fault_test_pool"
    run = fake_started_run(instance, worker, pool)

    def failed_and_freed() -> bool:
        status = instance.get_run_by_id(run.run_id).status
        slots = instance.event_log_storage.get_concurrency_info(pool).claimed_slots
        return status == DagsterRunStatus.FAILURE and not slots

    wait_until(
        failed_and_freed,
        timeout=MONITORING_TIMEOUT_SECONDS,
        every=2,
        what=lambda: f"run monitoring fails the run and frees its slot\n{dagster_dev.log_tail()}",
    )
    message = failure_message(instance, run.run_id)
    assert f"pid {victim.pid}" in message and "is gone" in message and "run monitoring" in message, message


def test_a_blocked_promotion_names_the_run_it_waits_for_and_goes_on_once_that_is_reaped(
    playback_archive: Path, tmp_path: Path
):
    lakehouse = Lakehouse(tmp_path, playback_archive)  # its own: the overlapping backfills' stays as it was
    instance = lakehouse.instance()
    pool = "promote_views_per_title"
    holder_process, holder_worker = sleeper()
    with stopped_at_exit(holder_process):
        holder = fake_started_run(instance, holder_worker, pool)
        backfill = lakehouse.start()
        with stopped_at_exit(backfill):
            expected = f"Pool {pool}: waiting for run {holder.run_id} (STARTED, step prod__views_per_title_production, worker pid {holder_process.pid}"

            def said() -> list[str]:
                return [
                    message
                    for run in instance.get_runs()
                    if run.run_id != holder.run_id
                    for message in engine_messages(instance, run.run_id)
                    if message.startswith(expected)
                ]

            waiting = wait_until(
                said,
                timeout=RUN_TIMEOUT_SECONDS,
                every=2,
                what="the backfill names the run it waits for",
                process=backfill,
            )
            assert waiting[0].endswith(", alive)"), waiting

            # The holder dies; the operator's `runs --reap` fails it and frees the slot; the backfill goes on.
            kill(holder_process)
            env = {**os.environ, "DAGSTER_HOME": str(lakehouse.home)}
            reaped = subprocess.run(
                [str(DAGSTER_CLI.with_name("backfill-platform")), "runs", "--reap"],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            assert f"failed 1 dead run(s) and freed their slots: {holder.run_id}" in reaped.stdout, (
                reaped.stdout
            )
            assert wait(backfill) == 0
    assert instance.get_run_by_id(holder.run_id).status == DagsterRunStatus.FAILURE
    assert "backfill-platform runs --reap" in failure_message(instance, holder.run_id)
    assert_no_slot_held(instance)
