"""A backfill submitted to a running Dagster webserver (`backfill --instance URL`), over its GraphQL API.

The same calls the UI makes: `launchPartitionBackfill` with the request's asset keys and days, polled
with `partitionBackfillOrError` until the daemon marks it done; then each run's check evaluations and
step failures from `logsForRun`, so the per-day report needs no access to the instance's storage (it
may be remote). `dagster_graphql.DagsterGraphQLClient` submits jobs but not partition backfills, hence
this small client (stdlib only). The end-to-end tests use the same queries (`backfill_platform_tests/
support/dagster_dev.py`).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

TERMINAL_BACKFILL_STATUSES = {"COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED"}

WORKSPACE_QUERY = """
query Workspace {
  workspaceOrError {
    __typename
    ... on Workspace {
      locationEntries {
        name
        loadStatus
        locationOrLoadError {
          __typename
          ... on PythonError { message stack }
        }
      }
    }
    ... on PythonError { message stack }
  }
}
"""

ASSET_NODES_QUERY = """
query AssetNodes($assetKeys: [AssetKeyInput!]) {
  assetNodes(assetKeys: $assetKeys) { assetKey { path } }
}
"""

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

METADATA_ENTRIES = """
metadataEntries {
  __typename
  label
  ... on IntMetadataEntry { intRepr }
  ... on FloatMetadataEntry { floatValue }
  ... on TextMetadataEntry { text }
  ... on BoolMetadataEntry { boolValue }
  ... on MarkdownMetadataEntry { mdStr }
  ... on JsonMetadataEntry { jsonString }
}
"""

CHECK_EXECUTIONS_QUERY = f"""
query CheckExecutions($assetKey: AssetKeyInput!, $checkName: String!, $partition: String, $limit: Int!) {{
  assetCheckExecutions(assetKey: $assetKey, checkName: $checkName, partition: $partition, limit: $limit) {{
    runId
    status
    partition
    evaluation {{
      success
      partition
      severity
      {METADATA_ENTRIES}
    }}
  }}
}}
"""

# A run's check evaluations and step failures (what `read_back` takes from a local event log).
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


class SubmitError(RuntimeError):
    """The webserver did not answer, refused the request, or cannot run these assets."""


@dataclass(frozen=True)
class GraphQLClient:
    """POSTs GraphQL to `<url>/graphql`; any transport or GraphQL error becomes a `SubmitError`."""

    url: str
    timeout: float = 30

    @property
    def base_url(self) -> str:
        return self.url.rstrip("/").removesuffix("/graphql")

    @property
    def endpoint(self) -> str:
        return f"{self.base_url}/graphql"

    def query(self, query: str, variables: dict | None = None, timeout: float | None = None) -> dict:
        body = json.dumps({"query": query, "variables": variables or {}}).encode()
        request = urllib.request.Request(
            self.endpoint, data=body, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout or self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as error:
            detail = error.read()[:300].decode(errors="replace")
            raise SubmitError(f"{self.endpoint} answered HTTP {error.code}: {detail}") from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise SubmitError(f"no Dagster webserver answers at {self.base_url}: {reason}") from None
        try:
            payload = json.loads(raw)
        except ValueError:
            raise SubmitError(f"{self.endpoint} did not answer GraphQL: {raw[:200]!r}") from None
        if payload.get("errors"):
            messages = "; ".join(str(e.get("message", e)) for e in payload["errors"])
            raise SubmitError(f"GraphQL error from {self.endpoint}: {messages}")
        return payload["data"]


def workspace_problems(client: GraphQLClient) -> tuple[bool, list[str]]:
    """(every code location finished loading, the load errors of those that failed)."""
    workspace = client.query(WORKSPACE_QUERY)["workspaceOrError"]
    if workspace["__typename"] != "Workspace":
        return True, [workspace.get("message", workspace["__typename"])]
    entries = workspace.get("locationEntries") or []
    loaded = bool(entries) and all(e["loadStatus"] == "LOADED" for e in entries)
    errors = [
        f"code location {e['name']!r} failed to load: {_first_line(e['locationOrLoadError'].get('message'))}"
        for e in entries
        if (e.get("locationOrLoadError") or {}).get("__typename") == "PythonError"
    ]
    return loaded, errors


def _first_line(message: str | None) -> str:
    lines = (message or "").strip().splitlines()
    return lines[0][:400] if lines else "(no message)"


def wait_until_loaded(client: GraphQLClient, timeout: float = 180, poll: float = 1) -> None:
    """Until every code location is LOADED; a location that failed to load raises at once."""
    deadline = time.monotonic() + timeout
    while True:
        loaded, errors = workspace_problems(client)
        if errors:
            raise SubmitError("; ".join(errors))
        if loaded:
            return
        if time.monotonic() > deadline:
            raise SubmitError(f"the code locations at {client.base_url} did not load in {timeout:.0f}s")
        time.sleep(poll)


def missing_assets(client: GraphQLClient, asset_paths: list[list[str]]) -> list[str]:
    """The asset keys (`a/b`) no code location of the webserver defines."""
    keys = [{"path": path} for path in asset_paths]
    nodes = client.query(ASSET_NODES_QUERY, {"assetKeys": keys})["assetNodes"]
    found = {"/".join(node["assetKey"]["path"]) for node in nodes}
    return ["/".join(path) for path in asset_paths if "/".join(path) not in found]


def launch_backfill(
    client: GraphQLClient,
    asset_paths: list[list[str]],
    partitions: list[str],
    title: str,
    tags: dict[str, str] | None = None,
) -> str:
    """Launch an asset backfill of `partitions` (as the UI does); its id."""
    params = {
        "assetSelection": [{"path": path} for path in asset_paths],
        "partitionNames": partitions,
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
        materialized=sum(s["numPartitionsMaterialized"] for s in statuses),
        failed=sum(s["numPartitionsFailed"] for s in statuses),
        in_progress=sum(s["numPartitionsInProgress"] for s in statuses),
    )


def metadata_values(entries: list[dict]) -> dict:
    """Label -> plain value (ints as int) of GraphQL metadata entries."""
    fields = {
        "FloatMetadataEntry": "floatValue",
        "TextMetadataEntry": "text",
        "BoolMetadataEntry": "boolValue",
        "MarkdownMetadataEntry": "mdStr",
        "JsonMetadataEntry": "jsonString",
    }
    values = {}
    for entry in entries:
        kind = entry["__typename"]
        if kind == "IntMetadataEntry":
            values[entry["label"]] = int(entry["intRepr"])
        else:
            field = fields.get(kind)
            values[entry["label"]] = entry.get(field) if field else kind
    return values


def run_events(client: GraphQLClient, run_id: str, page: int = 1000) -> list[dict]:
    """The run's check evaluations and step failures (other events come back as bare `__typename`s)."""
    events: list[dict] = []
    cursor = None
    while True:
        variables = {"runId": run_id, "afterCursor": cursor, "limit": page}
        answer = client.query(RUN_EVENTS_QUERY, variables)["logsForRun"]
        if answer["__typename"] != "EventConnection":
            raise SubmitError(f"run {run_id}: {answer.get('message') or answer['__typename']}")
        events += [e for e in answer["events"] if len(e) > 1]
        if not answer["hasMore"] or not answer["events"]:
            return events
        cursor = answer["cursor"]


def failure_text(event: dict) -> str:
    """The user's exception (innermost cause), else the failure's description, on one line."""
    description = (event.get("failureMetadata") or {}).get("description")
    if description:
        return description
    error, message = event.get("error"), ""
    while error is not None:
        message = error.get("message") or message
        error = error.get("cause")
    message = message.strip()
    return message.splitlines()[0][:400] if message else "failed"
