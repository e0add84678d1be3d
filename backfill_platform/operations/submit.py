"""A backfill submitted to a running Dagster webserver (`backfill --instance URL`), over its GraphQL API.

The same calls the UI makes: `launchPartitionBackfill` with the request's asset keys and days, polled
with `partitionBackfillOrError` until the daemon marks it done, with its progress; then the same report
as a run in this process, read back from each run's `logsForRun` (`operations/read_back.py`), so it needs no
access to the instance's storage (it may be remote). The client is `operations/graphql.py`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from backfill_platform.dagster_internals import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG
from backfill_platform.operations.backfill import BackfillOutcome, BackfillRequest
from backfill_platform.operations.graphql import GraphQLClient, SubmitError, missing_assets, wait_until_loaded
from backfill_platform.operations.read_back import events_over_graphql, read_back

TERMINAL_BACKFILL_STATUSES = {"COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED"}

LAUNCH_MUTATION = """
mutation Launch($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId launchedRunIds }
    ... on Error { message }
    ... on PythonError { stack }
  }
}
"""

BACKFILL_QUERY = """
query Backfill($backfillId: String!) {
  partitionBackfillOrError(backfillId: $backfillId) {
    __typename
    ... on PartitionBackfill {
      id
      status
      isAssetBackfill
      title
      partitionNames
      tags { key value }
      error { message stack }
      runs {
        runId
        status
        tags { key value }
      }
      assetBackfillData {
        assetBackfillStatuses {
          __typename
          ... on AssetPartitionsStatusCounts {
            assetKey { path }
            numPartitionsTargeted
            numPartitionsInProgress
            numPartitionsMaterialized
            numPartitionsFailed
          }
        }
      }
    }
    ... on Error { message }
    ... on PythonError { stack }
  }
}
"""


def launch_backfill(
    client: GraphQLClient,
    asset_paths: list[list[str]],
    partitions: list[str] | dict[tuple[str, ...], tuple[str, str]],
    title: str,
    tags: dict[str, str] | None = None,
) -> str:
    """Launch an asset backfill of `partitions` (as the UI does); its id. `partitions` may instead give
    each asset's own range (`{path: (first, last)}`): assets of different partitions (a source's hours
    under a dataset's days) in one backfill, whose daemon runs them in dependency order."""
    selection = (
        {"partitionNames": partitions}
        if isinstance(partitions, list)
        else {
            "partitionsByAssets": [
                {"assetKey": {"path": path}, "partitions": {"range": {"start": first, "end": last}}}
                for path, (first, last) in partitions.items()
            ]
        }
    )
    params = {
        "assetSelection": [{"path": path} for path in asset_paths],
        **selection,
        "tags": [{"key": k, "value": v} for k, v in (tags or {}).items()],
        "title": title,
    }
    launched = client.query(LAUNCH_MUTATION, {"params": params})["launchPartitionBackfill"]
    if launched["__typename"] != "LaunchBackfillSuccess":
        detail = launched.get("message") or "\n".join(launched.get("stack") or []) or launched["__typename"]
        raise SubmitError(f"the backfill was refused ({launched['__typename']}): {detail}")
    return launched["backfillId"]


def backfill_state(client: GraphQLClient, backfill_id: str) -> dict:
    backfill = client.query(BACKFILL_QUERY, {"backfillId": backfill_id})["partitionBackfillOrError"]
    if backfill["__typename"] != "PartitionBackfill":
        raise SubmitError(f"backfill {backfill_id}: {backfill.get('message') or backfill['__typename']}")
    return backfill


def wait_for_backfill(
    client: GraphQLClient,
    backfill_id: str,
    timeout: float | None = None,
    poll: float = 3,
    on_poll: Callable[[dict], None] | None = None,
) -> dict:
    """Poll `partitionBackfillOrError` until the daemon marks the backfill done; return it.

    `on_poll` sees every state (e.g. to show progress, or to fail when a local server died). Raises
    `TimeoutError` after `timeout` seconds (None: wait as long as it takes)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        backfill = backfill_state(client, backfill_id)
        if on_poll is not None:
            on_poll(backfill)
        if backfill["status"] in TERMINAL_BACKFILL_STATUSES:
            return backfill
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(f"backfill {backfill_id} not done after {timeout:.0f}s: {backfill}")
        time.sleep(poll)


def asset_statuses(backfill: dict) -> dict[str, dict]:
    """'raw/playback_events' -> that asset's partition counts in the backfill."""
    return {
        "/".join(s["assetKey"]["path"]): s
        for s in (backfill.get("assetBackfillData") or {}).get("assetBackfillStatuses") or []
        if s["__typename"] == "AssetPartitionsStatusCounts"
    }


@dataclass(frozen=True)
class BackfillProgress:
    backfill_id: str
    status: str
    runs: int
    runs_done: int
    partitions: int  # asset partitions targeted
    materialized: int
    failed: int
    in_progress: int

    @property
    def done(self) -> int:
        return self.materialized + self.failed

    def text(self) -> str:
        return (
            f"backfill {self.backfill_id} {self.status}: runs {self.runs_done}/{self.runs} done, asset partitions "
            f"{self.materialized}/{self.partitions} materialized, {self.failed} failed, "
            f"{self.in_progress} in progress"
        )


RUN_END_STATUSES = {"SUCCESS", "FAILURE", "CANCELED"}


def progress_of(backfill: dict) -> BackfillProgress:
    statuses = asset_statuses(backfill).values()
    runs = backfill.get("runs") or []
    return BackfillProgress(
        backfill_id=backfill["id"],
        status=backfill["status"],
        runs=len(runs),
        runs_done=sum(1 for r in runs if r["status"] in RUN_END_STATUSES),
        partitions=sum(s["numPartitionsTargeted"] for s in statuses),
        # Of the targeted partitions: a dataset backfill's events step also materializes the source days
        # its lookback reads before the range, which Dagster counts beside the targeted ones.
        materialized=sum(min(s["numPartitionsMaterialized"], s["numPartitionsTargeted"]) for s in statuses),
        failed=sum(s["numPartitionsFailed"] for s in statuses),
        in_progress=sum(s["numPartitionsInProgress"] for s in statuses),
    )


def _partitions(request: BackfillRequest) -> list[str] | dict[tuple[str, ...], tuple[str, str]]:
    """What the backfill selects: the range's partitions for every asset, or each asset's own range when
    a source's partitions are not the dataset's. Dagster maps those across one time zone only."""
    if not request.mixed:
        return request.days
    zones = {request.grain.zone, *(s.grain.zone for s in request.streams)}
    if len(zones) > 1:
        raise SubmitError(
            f"{request.dataset.name}'s days are days of {request.grain.zone}, its sources' partitions UTC: "
            "Dagster refuses an asset backfill that maps one to the other (two time zones). Run the "
            "backfill in this process instead (without --instance); it maps them exactly."
        )
    ranges = {}
    for run in request.runs():
        keys = [
            run.tags[ASSET_PARTITION_RANGE_START_TAG],
            run.tags[ASSET_PARTITION_RANGE_END_TAG],
        ]
        ranges |= {tuple(key.path): (keys[0], keys[1]) for key in run.asset_keys}
    return ranges


def submit_backfill(
    request: BackfillRequest,
    url: str,
    on_progress: Callable[[BackfillProgress], None] | None = None,
    poll: float = 3,
) -> BackfillOutcome:
    """Launch the request as a Dagster asset backfill on the webserver at `url`, wait until the daemon
    marks it done, and read it back: each run's failed checks and step failures over GraphQL (the
    instance may be remote), each day's ledger rows through PyIceberg (this process's catalog)."""
    if not request.days:
        raise ValueError(f"empty range: --start {request.start} must be before --end {request.end}")
    client = GraphQLClient(url)
    wait_until_loaded(client, timeout=60)
    paths = [list(key.path) for key in request.asset_keys()]
    missing = missing_assets(client, paths)
    if missing:
        raise SubmitError(
            f"no code location at {client.base_url} defines {', '.join(missing)}: does the webserver load "
            f"dataset {request.dataset.name!r} and stream {request.stream.name!r} (components of the project it serves)?"
        )
    # The daemon sets each run's partition range itself; the backfill carries reason, ticket and policy.
    tags = {k: v for k, v in request.tags().items() if not k.startswith("dagster/")}
    what = "dry run" if request.dry_run else "backfill"
    keys = request.days
    title = f"{request.dataset.name} {request.dataset.active_version} {what} {keys[0]}…{keys[-1]}"
    backfill_id = launch_backfill(client, paths, _partitions(request), title=title, tags=tags)
    seen: list[BackfillProgress] = []

    def polled(state: dict) -> None:
        progress = progress_of(state)
        if on_progress is not None and (not seen or progress != seen[-1]):
            on_progress(progress)
        seen.append(progress)

    backfill = wait_for_backfill(client, backfill_id, poll=poll, on_poll=polled)
    runs = backfill.get("runs") or []
    success = backfill["status"] in ("COMPLETED", "COMPLETED_SUCCESS") and bool(runs)
    success = success and all(r["status"] == "SUCCESS" for r in runs)
    error = backfill.get("error")
    failures = [f"backfill: {error.get('message', '').strip()[:400]}"] if error else []
    run_ids = tuple(r["runId"] for r in runs)
    shown = run_ids[0] if len(run_ids) == 1 else backfill_id
    events = [events_over_graphql(client, run_id) for run_id in run_ids]
    return read_back(request, events, shown, success, failures, run_ids or ("-",), backfill_id)
