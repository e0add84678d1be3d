"""The per-day report of a backfill, read back, never parsed from log text: one path for both routes.

A backfill run in this process (`operations/in_process.py`) and one submitted to a webserver
(`operations/submit.py`) end the same way. Each of their runs gives its check evaluations and step failures, from the Dagster
instance's event log here or over GraphQL there (the instance may be remote); `read_back` then turns
the failed checks into per-day problems with their numbers (`operations/explain.py`) and adds each day's
ledger rows, read through PyIceberg.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from dagster import DagsterEventType, DagsterInstance

from backfill_platform.lakehouse.resources import open_catalog
from backfill_platform.operations.backfill import BackfillOutcome, BackfillRequest, PartitionProblem
from backfill_platform.operations.explain import describe
from backfill_platform.operations.graphql import METADATA_ENTRIES, GraphQLClient, SubmitError, metadata_values
from backfill_platform.operations.ledger_view import Row, in_production, ingestion_rows, latest, ledger_rows
from backfill_platform.pipeline.validation.partition_inputs import INGESTION_FIGURES


@dataclass(frozen=True)
class CheckEvaluation:
    """One check's verdict on one day, with its metadata as plain values."""

    asset: str  # `raw/playback_events`
    check: str
    day: str | None
    passed: bool
    blocking: bool  # severity ERROR; otherwise a warning
    metadata: Mapping[str, Any]


@dataclass(frozen=True)
class RunEvents:
    """What the report needs from one run: its check evaluations and its step failures."""

    evaluations: list[CheckEvaluation]
    step_failures: list[str]  # `<step key>: <the user's error, one line>`


def read_back(
    request: BackfillRequest,
    runs: Iterable[RunEvents],
    run_id: str,
    success: bool,
    failures: Iterable[str] = (),
    run_ids: tuple[str, ...] = (),
    backfill_id: str | None = None,
) -> BackfillOutcome:
    """The outcome of a run (or a backfill's runs): every failed check and day with its numbers, the
    step failures (then `failures`, the backfill's own), and each day's ledger rows through PyIceberg."""
    runs = list(runs)
    bucket = request.dataset.bucket
    problems = [
        PartitionProblem(
            day=e.day or "-",
            asset=e.asset,
            check=e.check,
            detail=describe(e.check, e.metadata, bucket=bucket, partition=request.grain.unit),
            blocking=e.blocking,
        )
        for run in runs
        for e in run.evaluations
        if not e.passed
    ]
    catalog, days = open_catalog(), set(request.days)
    dataset, version = request.dataset, request.dataset.active_version
    rows = ledger_rows(catalog, dataset.name)
    validations = latest(rows, lambda r: r["version"] == version and not r["adopted"])
    return BackfillOutcome(
        request=request,
        run_id=run_id,
        success=success,
        problems=sorted(problems, key=lambda p: (p.day, p.asset, p.check)),
        step_failures=[f for run in runs for f in run.step_failures] + list(failures),
        validations={d: r for d, r in validations.items() if d in days},
        ingestions=_ingestions_per_partition(request, latest(ingestion_rows(catalog, request.stream.name))),
        production={d: r for d, r in in_production(rows).items() if d in days},
        run_ids=run_ids,
        backfill_id=backfill_id,
        before={
            (stream, day): row
            for stream, days in request.partitions_before.items()
            for day, row in latest(ingestion_rows(catalog, stream)).items()
            if day in days
        },
    )


def _ingestions_per_partition(request: BackfillRequest, latest_rows: dict[str, Row]) -> dict[str, Row]:
    """The primary stream's latest figures per partition of the range; for a dataset whose days are rolled
    up from the stream's hours, each day's are its own hours' summed (not a lookback's), checks passed
    when every hour's did and all were ingested (else the failed or missing hours are named). Partitions
    never ingested are left out."""
    days = set(request.days)
    stream = request.stream
    if stream.grain == request.grain:
        return {d: r for d, r in latest_rows.items() if d in days}
    rolled = {}
    for day in request.days:
        hours = stream.grain.keys_between(*request.grain.bounds(day))
        rows = [latest_rows[k] for k in hours if k in latest_rows]
        if not rows:
            continue
        failed = [
            f"{row['partition_key']}: {row['failed_checks']}" for row in rows if not row["checks_passed"]
        ]
        if len(rows) < len(hours):
            failed.append(
                f"{len(hours) - len(rows)} of its {len(hours)} {stream.grain.plural} never ingested"
            )
        rolled[day] = {
            **rows[0],
            **{name: sum(row[name] or 0 for row in rows) for name in INGESTION_FIGURES},
            "checks_passed": not failed,
            "failed_checks": "; ".join(failed) or None,
            "partition_key": day,
        }
    return rolled


# ---- from the Dagster instance's event log (a run of this process) ----


def events_in_log(instance: DagsterInstance, run_id: str) -> RunEvents:
    """The run's check evaluations and step failures, from the instance's event log."""
    evaluations = []
    for record in instance.get_records_for_run(
        run_id, of_type=DagsterEventType.ASSET_CHECK_EVALUATION, limit=100_000
    ).records:
        evaluation = record.event_log_entry.dagster_event.event_specific_data
        evaluations.append(
            CheckEvaluation(
                asset=evaluation.asset_key.to_user_string(),
                check=evaluation.check_name,
                day=evaluation.partition,
                passed=evaluation.passed,
                blocking=evaluation.severity.value == "ERROR",
                metadata={k: getattr(v, "value", v) for k, v in evaluation.metadata.items()},
            )
        )
    failures = [
        record.event_log_entry.dagster_event.step_key + ": " + _logged_failure_text(record)
        for record in instance.get_records_for_run(run_id, of_type=DagsterEventType.STEP_FAILURE).records
    ]
    return RunEvents(evaluations, failures)


def _logged_failure_text(record) -> str:
    data = record.event_log_entry.dagster_event.event_specific_data
    if data.user_failure_data and data.user_failure_data.description:
        return data.user_failure_data.description
    error = data.error
    while error is not None and error.cause is not None:  # the user's exception, not Dagster's wrapper
        error = error.cause
    message = error.message.strip() if error is not None else ""
    return message.splitlines()[0][:400] if message else "failed"


# ---- over GraphQL (a run of a submitted backfill; the instance may be remote) ----

RUN_EVENTS_QUERY = f"""
query RunEvents($runId: ID!, $afterCursor: String, $limit: Int) {{
  logsForRun(runId: $runId, afterCursor: $afterCursor, limit: $limit) {{
    __typename
    ... on EventConnection {{
      cursor
      hasMore
      events {{
        __typename
        ... on AssetCheckEvaluationEvent {{
          evaluation {{
            assetKey {{ path }}
            checkName
            success
            severity
            partition
            {METADATA_ENTRIES}
          }}
        }}
        ... on ExecutionStepFailureEvent {{
          stepKey
          error {{ message cause {{ message cause {{ message }} }} }}
          failureMetadata {{ description }}
        }}
      }}
    }}
    ... on Error {{ message }}
    ... on PythonError {{ stack }}
  }}
}}
"""


def events_over_graphql(client: GraphQLClient, run_id: str, page: int = 1000) -> RunEvents:
    """The run's check evaluations and step failures, from `logsForRun` page by page."""
    evaluations, failures = [], []
    cursor = None
    while True:
        variables = {"runId": run_id, "afterCursor": cursor, "limit": page}
        answer = client.query(RUN_EVENTS_QUERY, variables)["logsForRun"]
        if answer["__typename"] != "EventConnection":
            raise SubmitError(f"run {run_id}: {answer.get('message') or answer['__typename']}")
        for event in answer["events"]:  # other events come back as bare `__typename`s
            if event["__typename"] == "ExecutionStepFailureEvent":
                failures.append(f"{event['stepKey']}: {_reported_failure_text(event)}")
            elif event["__typename"] == "AssetCheckEvaluationEvent":
                evaluation = event["evaluation"]
                evaluations.append(
                    CheckEvaluation(
                        asset="/".join(evaluation["assetKey"]["path"]),
                        check=evaluation["checkName"],
                        day=evaluation.get("partition"),
                        passed=evaluation["success"],
                        blocking=evaluation["severity"] == "ERROR",
                        metadata=metadata_values(evaluation["metadataEntries"]),
                    )
                )
        if not answer["hasMore"] or not answer["events"]:
            return RunEvents(evaluations, failures)
        cursor = answer["cursor"]


def _reported_failure_text(event: dict) -> str:
    """The failure's description, else the user's exception (innermost cause), on one line."""
    description = (event.get("failureMetadata") or {}).get("description")
    if description:
        return description
    error, message = event.get("error"), ""
    while error is not None:
        message = error.get("message") or message
        error = error.get("cause")
    message = message.strip()
    return message.splitlines()[0][:400] if message else "failed"
