"""A backfill run in this process: the code location's asset job for the range, as one Dagster run.

The run executes the asset job of the working directory's project (its code location module,
`components/registry.find_project`; this package's `backfill_platform.definitions` outside one) with its own
executor (worker tag, catalog writer lock, pool waits), recorded in the Dagster instance of
`DAGSTER_HOME`: the same run the UI shows, with the same tags a UI backfill would carry. Progress: a
watcher thread reads the run's step events from the instance as they are stored (`operations/progress.py`).
The report is then read back from the run's event log and the ledger (`operations/read_back.py`).

Without DAGSTER_HOME, the instance is `<BACKFILL_PLATFORM_DATA>/dagster` (`orchestration/instance.py`),
so a second data directory has its own run history.
"""

from __future__ import annotations

from collections.abc import Callable

from dagster import DagsterInstance, execute_job

from backfill_platform.components.registry import find_project, importable
from backfill_platform.dagster_internals import ReconstructableRepository
from backfill_platform.operations.backfill import BackfillOutcome, BackfillRequest, BackfillRun
from backfill_platform.operations.progress import StepProgress, StepWatcher
from backfill_platform.operations.read_back import events_in_log, read_back


def run_backfill(
    request: BackfillRequest,
    instance: DagsterInstance,
    on_step: Callable[[StepProgress], None] | None = None,
) -> BackfillOutcome:
    """Run the request's assets for its range as runs of the location's asset job (one, or a source's
    hours first when the dataset's days are rolled up from them: `BackfillRequest.runs`); read them back.
    A run that fails ends the backfill: the runs after it would only refuse on its partitions."""
    if not request.days:
        raise ValueError(f"empty range: --start {request.start} must be before --end {request.end}")
    project = find_project()
    importable(project)
    repository = ReconstructableRepository.for_module(project.definitions_module, "defs", str(project.root))
    run_config = {"loggers": {"console": {"config": {"log_level": request.log_level}}}}
    run_ids, success = [], True
    for planned in request.runs():
        job = repository.get_definition().get_implicit_job_def_for_assets(planned.asset_keys)
        if job is None:
            raise ValueError(
                f"no asset job holds {', '.join(k.to_user_string() for k in planned.asset_keys)}"
            )
        run_id, success = _execute(repository, job.name, planned, run_config, instance, on_step)
        run_ids.append(run_id)
        if not success:
            break
    events = [events_in_log(instance, run_id) for run_id in run_ids]
    return read_back(request, events, run_ids[-1], success, run_ids=tuple(run_ids))


def _execute(
    repository, job_name: str, planned: BackfillRun, run_config: dict, instance, on_step
) -> tuple[str, bool]:
    """One run of `planned` in this process, its steps shown as they end; (run id, success)."""
    watcher = StepWatcher(instance, planned.tags, on_step) if on_step else None
    if watcher:
        watcher.start()
    try:
        with execute_job(
            repository.get_reconstructable_job(job_name),
            instance=instance,
            run_config=run_config,
            tags=planned.tags,
            asset_selection=planned.asset_keys,
        ) as result:
            return result.run_id, result.success
    finally:
        if watcher:
            watcher.stop()
