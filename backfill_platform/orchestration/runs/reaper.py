"""Fail the runs whose worker process is gone, and free what they held.

A dead run keeps its `promote_<dataset>` / `ingest_<stream>` pool slots; every later run in that pool
would wait silently. Three callers use this module: Dagster's run monitoring through the run launcher
(`launcher.py`, daemon deployments), a run that finds itself blocked by a pool (`executor.py`, which
also covers CLI runs without a daemon), and `backfill-platform runs reap`.
Only runs whose worker was recorded on this host are judged; a run elsewhere is never failed from here.
"""

from __future__ import annotations

from dataclasses import dataclass

from dagster import DagsterInstance, DagsterRun, DagsterRunStatus, RunsFilter

from backfill_platform.orchestration.runs.workers import Liveness, RunWorker

# Statuses of a run whose worker should be alive.
ACTIVE_STATUSES = [DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING]


def dead_run_message(worker: RunWorker, by: str) -> str:
    return (
        f"Run worker {worker} is gone (killed or crashed); marked failed by {by}, and its pool slots "
        "were freed. Production only ever holds whole promotions; re-run the same partitions to repair "
        "what it left half-done."
    )


def reap_run(instance: DagsterInstance, run: DagsterRun, worker: RunWorker, by: str) -> None:
    """Mark a run whose worker is gone as failed and free its concurrency slots and pending claims."""
    current = instance.get_run_by_id(run.run_id)
    if current is not None and current.status in ACTIVE_STATUSES:
        instance.report_run_failed(current, dead_run_message(worker, by))
    instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)


def reap_dead_runs(instance: DagsterInstance, by: str) -> list[str]:
    """Fail every active run of this host whose worker is gone; return their run ids."""
    reaped = []
    for run in instance.get_runs(RunsFilter(statuses=ACTIVE_STATUSES)):
        worker = RunWorker.of_run(run)
        if worker is not None and worker.liveness() is Liveness.GONE:
            reap_run(instance, run, worker, by)
            reaped.append(run.run_id)
    return reaped


@dataclass(frozen=True)
class PoolHolder:
    run_id: str
    step_key: str
    status: str
    worker: RunWorker | None
    liveness: Liveness

    def describe(self) -> str:
        where = f"worker {self.worker}, {self.liveness.value}" if self.worker else "worker not recorded"
        return f"run {self.run_id} ({self.status}, step {self.step_key}, {where})"


def pool_holders(instance: DagsterInstance, pool: str) -> list[PoolHolder]:
    """The runs holding a slot of `pool`, with their status and whether their worker is alive."""
    holders = []
    for slot in instance.event_log_storage.get_concurrency_info(pool).claimed_slots:
        run = instance.get_run_by_id(slot.run_id)
        worker = RunWorker.of_run(run) if run else None
        holders.append(
            PoolHolder(
                run_id=slot.run_id,
                step_key=slot.step_key,
                status=run.status.value if run else "DELETED",
                worker=worker,
                liveness=worker.liveness() if worker else Liveness.UNKNOWN,
            )
        )
    return holders


def reap_pool_holders(instance: DagsterInstance, pool: str, by: str) -> tuple[list[str], list[PoolHolder]]:
    """Free the slots of `pool` held by dead runs (or runs that already ended, or were deleted).

    Returns the freed run ids and the holders still alive or not judgeable from this host.
    """
    freed, waiting_for = [], []
    for holder in pool_holders(instance, pool):
        run = instance.get_run_by_id(holder.run_id)
        if run is None or run.is_finished:
            instance.event_log_storage.free_concurrency_slots_for_run(holder.run_id)
            freed.append(holder.run_id)
        elif holder.worker is not None and holder.liveness is Liveness.GONE:
            reap_run(instance, run, holder.worker, by)
            freed.append(holder.run_id)
        else:
            waiting_for.append(holder)
    return freed, waiting_for


@dataclass(frozen=True)
class ActiveRun:
    run_id: str
    status: str
    job_name: str
    worker: RunWorker | None
    liveness: Liveness
    holds: list[str]  # pools it holds a slot of
    waits_for: list[str]  # pools it waits for


def active_runs(instance: DagsterInstance) -> list[ActiveRun]:
    """Every run that should have a live worker, with the pool slots it holds or waits for."""
    storage = instance.event_log_storage
    infos = storage.get_concurrency_infos(sorted(storage.get_concurrency_keys()))
    result = []
    for run in instance.get_runs(RunsFilter(statuses=ACTIVE_STATUSES)):
        worker = RunWorker.of_run(run)
        result.append(
            ActiveRun(
                run_id=run.run_id,
                status=run.status.value,
                job_name=run.job_name,
                worker=worker,
                liveness=worker.liveness() if worker else Liveness.UNKNOWN,
                holds=[p for p, i in infos.items() if any(s.run_id == run.run_id for s in i.claimed_slots)],
                waits_for=[
                    p for p, i in infos.items() if any(s.run_id == run.run_id for s in i.pending_steps)
                ],
            )
        )
    return result
