"""Dagster's default run launcher, able to tell run monitoring whether a run's worker is alive.

The default launcher cannot check a run worker's health, so the daemon's run monitoring never fails a
run whose process was killed: it stays STARTED and keeps its pool slots. This launcher answers from the
worker each run records (`workers.py`); the daemon then marks a dead run failed and frees its slots
(`run_monitoring.free_slots_after_run_end_seconds`). Enable it in dagster.yaml:

    run_launcher:
      module: backfill_platform.orchestration.runs.launcher
      class: WorkerCheckingRunLauncher
"""

from __future__ import annotations

from dagster import DagsterRun, DefaultRunLauncher

from backfill_platform.dagster_internals import CheckRunHealthResult, WorkerStatus
from backfill_platform.orchestration.runs.reaper import dead_run_message
from backfill_platform.orchestration.runs.workers import Liveness, RunWorker


class WorkerCheckingRunLauncher(DefaultRunLauncher):
    @property
    def supports_check_run_worker_health(self) -> bool:
        return True

    def check_run_worker_health(self, run: DagsterRun) -> CheckRunHealthResult:
        worker = RunWorker.of_run(run)
        if worker is None:
            # Not recorded yet (the run is between STARTED and its executor) or not a run of this code:
            # run monitoring fails any answer but RUNNING, so say RUNNING rather than guess.
            return CheckRunHealthResult(WorkerStatus.RUNNING, "run worker not recorded")
        liveness = worker.liveness()
        if liveness is Liveness.GONE:
            return CheckRunHealthResult(WorkerStatus.FAILED, dead_run_message(worker, "run monitoring"))
        # ALIVE, or on another host, where this daemon cannot look.
        return CheckRunHealthResult(WorkerStatus.RUNNING, f"run worker {worker}: {liveness.value}")
