"""`backfill-platform backfill`: events → active shadow → checks → production for a range, in one run.

The run executes the code location's asset job (`backfill_platform.definitions`) in this process with
the location's own executor (worker tag, catalog writer lock, pool waits), recorded in the Dagster
instance of `DAGSTER_HOME` — the same run the UI shows, with the same tags a UI backfill would carry.
What happened is then read back, never parsed from log text: each failed check and day from the run's
`AssetCheckEvaluation`s, each day's figures and promotion from the ledger. Progress: a watcher thread
reads the run's step events from the instance as they are stored (`ops/progress.py`).

`submit_backfill` sends the same request to a running webserver instead (`--instance URL`, through
`ops/submit.py`) and reads the same report back over GraphQL.

Without DAGSTER_HOME, the instance is `<BACKFILL_PLATFORM_DATA>/dagster` (`instance.py`), so a
second data directory has its own run history.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date

from dagster import AssetKey, DagsterEventType, DagsterInstance
from dagster._core.definitions.reconstruct import ReconstructableRepository
from dagster._core.execution.api import execute_job
from rich.table import Table

from backfill_platform.lakehouse.resources import open_catalog
from backfill_platform.ops import submit
from backfill_platform.ops.explain import describe
from backfill_platform.ops.ledger_view import (
    Row,
    in_production,
    ingestion_rows,
    latest,
    ledger_rows,
    production_label,
)
from backfill_platform.ops.progress import StepProgress, StepWatcher
from backfill_platform.pipeline.events.assets import events_key
from backfill_platform.pipeline.partitions import days_between
from backfill_platform.pipeline.promotion.assets import production_key
from backfill_platform.pipeline.run_tags import (
    ALL_OR_NOTHING,
    PER_DAY,
    PROMOTION_POLICY_TAG,
    REASON_TAG,
    TICKET_TAG,
)
from backfill_platform.pipeline.shadow.assets import shadow_key
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.durations import DAY
from backfill_platform.specs.stream import StreamSpec

DEFINITIONS_MODULE = "backfill_platform.definitions"
POLICIES = {"all": ALL_OR_NOTHING, "per-day": PER_DAY}


@dataclass(frozen=True)
class BackfillRequest:
    dataset: DatasetSpec
    stream: StreamSpec
    start: date
    end: date  # exclusive
    reason: str | None = None
    ticket: str | None = None
    dry_run: bool = False
    policy: str = ALL_OR_NOTHING
    log_level: str = "CRITICAL"  # failures are reported from the run's events, not its log

    @property
    def days(self) -> list[date]:
        return days_between(self.start, self.end)

    def asset_keys(self) -> list[AssetKey]:
        keys = [events_key(self.stream), shadow_key(self.dataset, self.dataset.active_version)]
        return keys if self.dry_run else [*keys, production_key(self.dataset)]

    def tags(self) -> dict[str, str]:
        tags = {
            "dagster/asset_partition_range_start": self.start.isoformat(),
            "dagster/asset_partition_range_end": (self.end - DAY).isoformat(),
            PROMOTION_POLICY_TAG: self.policy,
        }
        tags |= {REASON_TAG: self.reason} if self.reason else {}
        return tags | ({TICKET_TAG: self.ticket} if self.ticket else {})


@dataclass(frozen=True)
class DayProblem:
    """A check that failed (or warned) for one day, with its numbers."""

    day: str
    asset: str
    check: str
    detail: str
    blocking: bool


@dataclass
class BackfillOutcome:
    request: BackfillRequest
    run_id: str  # the run (in process), or the backfill's id when submitted
    success: bool
    problems: list[DayProblem]
    step_failures: list[str]
    validations: dict[date, Row] = field(default_factory=dict)  # latest ledger row of the version
    ingestions: dict[date, Row] = field(default_factory=dict)  # latest events figures
    production: dict[date, Row] = field(default_factory=dict)  # what production holds now
    run_ids: tuple[str, ...] = ()  # every run of a submitted backfill; () means (run_id,)
    backfill_id: str | None = None  # set when submitted to a webserver

    def promoted_by_this_run(self, day: date) -> bool:
        row = self.production.get(day)
        return bool(row and row.get("promotion_run_id") in (self.run_ids or (self.run_id,)))

    @property
    def held_back(self) -> list[date]:
        """Days this run was asked to promote and did not (none in a dry run)."""
        if self.request.dry_run:
            return []
        return [d for d in self.request.days if not self.promoted_by_this_run(d)]

    @property
    def ok(self) -> bool:
        blocking = any(p.blocking for p in self.problems)
        return self.success and not blocking and not self.held_back


def run_backfill(
    request: BackfillRequest,
    instance: DagsterInstance,
    on_step: Callable[[StepProgress], None] | None = None,
) -> BackfillOutcome:
    """Run the request's assets for its range as one run of the location's asset job; read it back."""
    if not request.days:
        raise ValueError(f"empty range: --start {request.start} must be before --end {request.end}")
    keys = request.asset_keys()
    repository = ReconstructableRepository.for_module(DEFINITIONS_MODULE, "defs", os.getcwd())
    job = repository.get_definition().get_implicit_job_def_for_assets(keys)
    if job is None:
        raise ValueError(f"no asset job holds {', '.join(k.to_user_string() for k in keys)}")
    run_config = {"loggers": {"console": {"config": {"log_level": request.log_level}}}}
    watcher = StepWatcher(instance, request.tags(), on_step) if on_step else None
    if watcher:
        watcher.start()
    try:
        with execute_job(
            repository.get_reconstructable_job(job.name),
            instance=instance,
            run_config=run_config,
            tags=request.tags(),
            asset_selection=keys,
        ) as result:
            run_id, success = result.run_id, result.success
    finally:
        if watcher:
            watcher.stop()
    return read_back(request, instance, run_id, success)


def read_back(
    request: BackfillRequest, instance: DagsterInstance, run_id: str, success: bool
) -> BackfillOutcome:
    """The run's failed checks (from its event log) and each day's ledger rows (through PyIceberg)."""
    bucket = request.dataset.bucket
    problems = []
    for record in instance.get_records_for_run(
        run_id, of_type=DagsterEventType.ASSET_CHECK_EVALUATION, limit=100_000
    ).records:
        evaluation = record.event_log_entry.dagster_event.event_specific_data
        if evaluation.passed:
            continue
        metadata = {k: getattr(v, "value", v) for k, v in evaluation.metadata.items()}
        problems.append(
            DayProblem(
                day=evaluation.partition or "-",
                asset=evaluation.asset_key.to_user_string(),
                check=evaluation.check_name,
                detail=describe(evaluation.check_name, metadata, bucket=bucket),
                blocking=evaluation.severity.value == "ERROR",
            )
        )
    failures = [
        record.event_log_entry.dagster_event.step_key + ": " + _failure_text(record)
        for record in instance.get_records_for_run(run_id, of_type=DagsterEventType.STEP_FAILURE).records
    ]
    return with_ledger(request, run_id, success, problems, failures)


def with_ledger(
    request: BackfillRequest,
    run_id: str,
    success: bool,
    problems: list[DayProblem],
    failures: list[str],
    run_ids: tuple[str, ...] = (),
    backfill_id: str | None = None,
) -> BackfillOutcome:
    """The outcome of a run (or a backfill's runs) with each day's ledger rows, through PyIceberg."""
    catalog, days = open_catalog(), set(request.days)
    dataset, version = request.dataset, request.dataset.active_version
    rows = ledger_rows(catalog, dataset.name)
    validations = latest(rows, lambda r: r["version"] == version and not r["adopted"])
    return BackfillOutcome(
        request=request,
        run_id=run_id,
        success=success,
        problems=sorted(problems, key=lambda p: (p.day, p.asset, p.check)),
        step_failures=failures,
        validations={d: r for d, r in validations.items() if d in days},
        ingestions={
            d: r for d, r in latest(ingestion_rows(catalog, request.stream.name)).items() if d in days
        },
        production={d: r for d, r in in_production(rows).items() if d in days},
        run_ids=run_ids,
        backfill_id=backfill_id,
    )


def _failure_text(record) -> str:
    data = record.event_log_entry.dagster_event.event_specific_data
    if data.user_failure_data and data.user_failure_data.description:
        return data.user_failure_data.description
    error = data.error
    while error is not None and error.cause is not None:  # the user's exception, not Dagster's wrapper
        error = error.cause
    message = error.message.strip() if error is not None else ""
    return message.splitlines()[0][:400] if message else "failed"


def submit_backfill(
    request: BackfillRequest,
    url: str,
    on_progress: Callable[[submit.BackfillProgress], None] | None = None,
    poll: float = 3,
) -> BackfillOutcome:
    """Launch the request as a Dagster asset backfill on the webserver at `url`, wait until the daemon
    marks it done, and read it back: each run's failed checks and step failures over GraphQL (the
    instance may be remote), each day's ledger rows through PyIceberg (this process's catalog)."""
    if not request.days:
        raise ValueError(f"empty range: --start {request.start} must be before --end {request.end}")
    client = submit.GraphQLClient(url)
    submit.wait_until_loaded(client, timeout=60)
    paths = [list(key.path) for key in request.asset_keys()]
    missing = submit.missing_assets(client, paths)
    if missing:
        raise submit.SubmitError(
            f"no code location at {client.base_url} defines {', '.join(missing)}: does the webserver load "
            f"dataset {request.dataset.name!r} and stream {request.stream.name!r} (its BACKFILL_PLATFORM_SPECS)?"
        )
    # The daemon sets each run's partition range itself; the backfill carries reason, ticket and policy.
    tags = {k: v for k, v in request.tags().items() if not k.startswith("dagster/")}
    what = "dry run" if request.dry_run else "backfill"
    last = request.end - DAY
    title = f"{request.dataset.name} {request.dataset.active_version} {what} {request.start}…{last}"
    backfill_id = submit.launch_backfill(
        client, paths, [d.isoformat() for d in request.days], title=title, tags=tags
    )
    seen: list[submit.BackfillProgress] = []

    def polled(state: dict) -> None:
        progress = submit.progress_of(state)
        if on_progress is not None and (not seen or progress != seen[-1]):
            on_progress(progress)
        seen.append(progress)

    backfill = submit.wait_for_backfill(client, backfill_id, poll=poll, on_poll=polled)
    runs = backfill.get("runs") or []
    bucket = request.dataset.bucket
    problems: list[DayProblem] = []
    failures: list[str] = []
    for run in runs:
        for event in submit.run_events(client, run["runId"]):
            if event["__typename"] == "ExecutionStepFailureEvent":
                failures.append(f"{event['stepKey']}: {submit.failure_text(event)}")
                continue
            evaluation = event["evaluation"]
            if evaluation["success"]:
                continue
            check = evaluation["checkName"]
            metadata = submit.metadata_values(evaluation["metadataEntries"])
            problems.append(
                DayProblem(
                    day=evaluation.get("partition") or "-",
                    asset="/".join(evaluation["assetKey"]["path"]),
                    check=check,
                    detail=describe(check, metadata, bucket=bucket),
                    blocking=evaluation["severity"] == "ERROR",
                )
            )
    success = backfill["status"] in ("COMPLETED", "COMPLETED_SUCCESS") and bool(runs)
    success = success and all(r["status"] == "SUCCESS" for r in runs)
    if backfill.get("error"):
        failures.append(f"backfill: {backfill['error'].get('message', '').strip()[:400]}")
    run_ids = tuple(r["runId"] for r in runs)
    shown = run_ids[0] if len(run_ids) == 1 else backfill_id
    return with_ledger(request, shown, success, problems, failures, run_ids or ("-",), backfill_id)


def report_table(outcome: BackfillOutcome) -> Table:
    """Per day, from the ledger: the events figures, the shadow, the checks and what production holds."""
    r = outcome.request
    what = "dry run" if r.dry_run else "backfill"
    runs = outcome.run_ids or (outcome.run_id,)
    source = f"run {', '.join(runs)}" if len(runs) <= 2 else f"{len(runs)} runs"
    source = f"backfill {outcome.backfill_id}, {source}" if outcome.backfill_id else source
    title = f"{r.dataset.name} {r.dataset.active_version} {what} ({source}), per day, from the ledger"
    table = Table(title=title)
    header = ("day", "records", "events", "dup", "quar.", "shadow rows", "checks", "production", "this run")
    for column in header:
        table.add_column(column, justify="right")
    for day in r.days:
        events, shadow = outcome.ingestions.get(day, {}), outcome.validations.get(day, {})
        checks = (
            "-" if not shadow else "passed" if shadow["checks_passed"] else f"[red]{shadow['failed_checks']}"
        )
        promoted = outcome.promoted_by_this_run(day)
        verdict = "dry run" if r.dry_run else "promoted" if promoted else "[red]held back"
        table.add_row(
            day.isoformat(), _n(events.get("records")), _n(events.get("written")),
            _n(events.get("duplicates")), _n(events.get("quarantined")), _n(shadow.get("shadow_rows")),
            checks, production_label(outcome.production.get(day)), verdict,
        )  # fmt: skip
    return table


def problem_lines(outcome: BackfillOutcome) -> list[str]:
    """`2026-10-03 quarantine_ratio 3.1% > 1%: 981 lines unknown_schema_version`, per failed day."""
    lines = [f"{p.day} {p.check} {p.detail}" + ("" if p.blocking else " (warning)") for p in outcome.problems]
    lines += [f"step {failure}" for failure in outcome.step_failures]
    return lines


def _n(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"
