"""A small GraphQL client for a running Dagster webserver: the calls the UI makes, stdlib only.

`dagster_graphql.DagsterGraphQLClient` submits jobs but not partition backfills, hence this client. It
checks that the code locations loaded and define the assets, and reads check evaluations' metadata as
plain values. Submitting a backfill is `operations/submit.py`; reading its runs back,
`operations/read_back.py`. The end-to-end tests use the same queries (`backfill_platform_tests/dagster_dev.py`).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass

from backfill_platform.masking import mask

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


class SubmitError(RuntimeError):
    """The webserver did not answer, refused the request, or cannot run these assets; the message is masked
    as it is made (`masking.mask`: it quotes the URL and the webserver's answer)."""

    def __init__(self, message: str) -> None:
        super().__init__(mask(message))


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
