"""The code location's executor: Dagster's in-process executor, plus what a run owes the others.

It wraps the executor `in_process_executor` creates (same name, same config), so it needs no private
Dagster class.

Before any step, the run records its worker (host, pid, start time) as a run tag, so a dead run can be
told from a slow one (`workers.py`). On the embedded tier it then takes the catalog's writer lock for
the whole run (`catalog_lock.py`). When a step is blocked by a pool, it says which run holds the slot,
and frees the slot itself when that run's worker is gone — which also covers runs started from the CLI,
where no daemon monitors anything. For the same reason it fails the dead runs of its host at its start.
"""

from __future__ import annotations

from collections.abc import Iterator

from dagster import DagsterEvent, DagsterEventType, Executor, executor, in_process_executor

from backfill_platform.dagster_internals import EngineEventData
from backfill_platform.orchestration.runs.catalog_lock import catalog_writer
from backfill_platform.orchestration.runs.reaper import reap_dead_runs, reap_pool_holders
from backfill_platform.orchestration.runs.workers import WORKER_TAG, RunWorker

BLOCKED_PREFIXES = ("Step blocked by limit for pool", "Step still blocked by limit for pool")


class FencedInProcessExecutor(Executor):
    """Runs the steps with `inner` (Dagster's in-process executor), fenced as described above."""

    def __init__(self, inner: Executor, jdbc_uri: str) -> None:
        self.inner = inner
        self.jdbc_uri = jdbc_uri

    @property
    def retries(self):
        return self.inner.retries

    @property
    def step_dependency_config(self):
        return self.inner.step_dependency_config

    def execute(self, plan_context, execution_plan) -> Iterator[DagsterEvent]:
        instance, run = plan_context.instance, plan_context.dagster_run
        worker = RunWorker.current()
        instance.add_run_tags(run.run_id, {WORKER_TAG: worker.tag_value()})

        def say(message: str) -> None:
            instance.report_engine_event(message, run)

        # Runs of this host that died earlier (a CLI run has no daemon watching it) must not keep
        # their slots until someone notices: fail them and free their slots before claiming any.
        reaped = reap_dead_runs(instance, by=f"run {run.run_id} at its start")
        if reaped:
            say(f"failed {len(reaped)} dead run(s) of this host and freed their slots: {', '.join(reaped)}")

        with catalog_writer(self.jdbc_uri, {"run": run.run_id, "job": run.job_name}, say=say):
            for event in self.inner.execute(plan_context, execution_plan):
                yield event
                pool = _blocked_pool(event)
                if pool:
                    yield _explain_wait(plan_context, pool)


def _blocked_pool(event: DagsterEvent) -> str | None:
    if event.event_type != DagsterEventType.ENGINE_EVENT or not event.message:
        return None
    if not event.message.startswith(BLOCKED_PREFIXES):
        return None
    return event.message.rsplit(" ", 1)[-1]


def _explain_wait(plan_context, pool: str) -> DagsterEvent:
    """Free the slots of dead holders, and name the live ones this run waits for."""
    freed, waiting_for = reap_pool_holders(
        plan_context.instance, pool, by=f"run {plan_context.run_id}, blocked by pool {pool}"
    )
    parts = []
    if freed:
        parts.append(f"freed the slot(s) of ended or dead run(s) {', '.join(freed)}")
    if waiting_for:
        parts.append("waiting for " + "; ".join(holder.describe() for holder in waiting_for))
    elif not freed:
        parts.append("the slot was released meanwhile")
    return DagsterEvent.engine_event(
        plan_context,
        f"Pool {pool}: " + "; ".join(parts),
        event_specific_data=EngineEventData(metadata={"pool": pool}),
    )


def fenced_in_process_executor(jdbc_uri: str):
    """An executor definition named `in_process` (same config as Dagster's), fenced as described above."""

    @executor(name="in_process", config_schema=in_process_executor.config_schema)
    def _executor(init_context) -> FencedInProcessExecutor:
        inner = in_process_executor.executor_creation_fn(init_context)
        return FencedInProcessExecutor(inner, jdbc_uri)

    return _executor
