"""The GraphQL the UI speaks to a `dagster dev` (`support/dagster_dev.py`), as the tests ask it.

Queries, launch and wait are the platform's own client (`backfill_platform/operations/graphql.py` and
`operations/submit.py`); what the UI reads besides is here: materializations with their times, check
executions, a sensor started and stopped as its toggle does, its ticks, and the runs and backfills of the
instance.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest

from backfill_platform.operations import graphql, submit
from backfill_platform_tests.support.dagster_dev import DagsterDev

BACKFILL_TIMEOUT_SECONDS = 480
POLL_SECONDS = 3

asset_statuses = submit.asset_statuses
metadata_values = graphql.metadata_values
CHECK_EXECUTIONS_QUERY = graphql.CHECK_EXECUTIONS_QUERY
METADATA_ENTRIES = graphql.METADATA_ENTRIES

MATERIALIZATIONS_QUERY = f"""
query Materializations($assetKey: AssetKeyInput!, $partitions: [String!]) {{
  assetOrError(assetKey: $assetKey) {{
    __typename
    ... on Asset {{
      assetMaterializations(partitions: $partitions) {{
        partition
        runId
        timestamp
        {METADATA_ENTRIES}
      }}
    }}
  }}
}}
"""


# --- backfills through GraphQL, as the UI launches them ----------------------------------------------


def launch_backfill(
    dev: DagsterDev,
    asset_paths: list[list[str]],
    days: list[str],
    title: str,
    tags: dict[str, str] | None = None,
) -> str:
    return submit.launch_backfill(dev.client, asset_paths, days, title, tags)


def wait_for_backfill(dev: DagsterDev, backfill_id: str) -> dict:
    """Poll `partitionBackfillOrError` until the daemon marks the backfill done; return it."""
    try:
        return submit.wait_for_backfill(
            dev.client,
            backfill_id,
            timeout=BACKFILL_TIMEOUT_SECONDS,
            poll=POLL_SECONDS,
            on_poll=lambda _: dev.assert_running(),
        )
    except TimeoutError as error:
        pytest.fail(f"{error}\n{dev.log_tail()}")


# --- what the UI reads about checks and materializations -----------------------------------------------


def check_executions(
    dev: DagsterDev, asset_path: list[str], check_name: str, partition: str, limit: int = 10
) -> list[dict]:
    """The check's executions for one partition, newest first."""
    variables = {
        "assetKey": {"path": asset_path},
        "checkName": check_name,
        "partition": partition,
        "limit": limit,
    }
    return dev.graphql(CHECK_EXECUTIONS_QUERY, variables)["assetCheckExecutions"]


def materializations(
    dev: DagsterDev, asset_path: list[str], partitions: list[str], missing_ok: bool = False
) -> list[dict]:
    """The asset's materializations of `partitions` (partition, runId, timestamp in milliseconds, metadata
    entries). An asset the server does not know fails, or has none if `missing_ok`."""
    variables = {"assetKey": {"path": asset_path}, "partitions": partitions}
    asset = dev.graphql(MATERIALIZATIONS_QUERY, variables)["assetOrError"]
    if missing_ok and asset["__typename"] != "Asset":
        return []
    assert asset["__typename"] == "Asset", asset
    return asset["assetMaterializations"]


def materialized_at(dev: DagsterDev, asset: list[str], days: list[str]) -> list[dict]:
    """The asset's materializations of `days` (none while the server does not know the asset), each
    `timestamp` in seconds."""
    return [
        {**m, "timestamp": int(m["timestamp"]) / 1000}
        for m in materializations(dev, asset, days, missing_ok=True)
    ]


def days_materialized_after(dev: DagsterDev, asset: list[str], days: list[str], after: float) -> set[str]:
    """Which of `days` the asset was materialized for after `after` (seconds since the epoch)."""
    return {m["partition"] for m in materialized_at(dev, asset, days) if m["timestamp"] > after}


# --- the daemon: a sensor, its ticks, and the runs and backfills it launches -----------------------------

AUTOMATION_TAG = "dagster/from_automation_condition"
SENSOR_TAG = "dagster/sensor_name"
BACKFILL_TAG = "dagster/backfill"
TICK_TAG = "dagster/tick"
ACTIVE_RUN_STATUSES = {"QUEUED", "NOT_STARTED", "STARTING", "STARTED", "CANCELING", "MANAGED"}
ACTIVE_BACKFILL_STATUSES = {"REQUESTED", "CANCELING", "FAILING"}

REPOSITORIES_QUERY = """
query Repositories {
  repositoriesOrError {
    __typename
    ... on RepositoryConnection { nodes { name location { name } sensors { name } } }
    ... on PythonError { message stack }
  }
}
"""

SENSOR_FIELDS = """
__typename
... on Sensor { name sensorState { id status } }
... on Error { message }
... on PythonError { stack }
"""

START_SENSOR_MUTATION = f"""
mutation StartSensor($selector: SensorSelector!) {{
  startSensor(sensorSelector: $selector) {{ {SENSOR_FIELDS} }}
}}
"""

SENSOR_QUERY = f"""
query Sensor($selector: SensorSelector!) {{
  sensorOrError(sensorSelector: $selector) {{ {SENSOR_FIELDS} }}
}}
"""

STOP_SENSOR_MUTATION = """
mutation StopSensor($id: String!) {
  stopSensor(id: $id) {
    __typename
    ... on StopSensorMutationResult { instigationState { id status } }
    ... on Error { message }
    ... on PythonError { stack }
  }
}
"""

TICKS_QUERY = """
query Ticks($selector: SensorSelector!, $limit: Int!) {
  sensorOrError(sensorSelector: $selector) {
    __typename
    ... on Sensor {
      sensorState {
        ticks(limit: $limit) {
          tickId
          status
          timestamp
          endTimestamp
          runIds
          skipReason
          error { message }
          requestedMaterializationsForAssets { assetKey { path } partitionKeys }
        }
      }
    }
  }
}
"""

RUNS_QUERY = """
query Runs {
  runsOrError {
    __typename
    ... on Runs {
      results {
        runId
        status
        creationTime
        startTime
        endTime
        assetSelection { path }
        tags { key value }
      }
    }
    ... on PythonError { message stack }
  }
}
"""

BACKFILLS_QUERY = """
query Backfills {
  partitionBackfillsOrError {
    __typename
    ... on PartitionBackfills {
      results { id status timestamp endTimestamp tags { key value } assetSelection { path } }
    }
    ... on PythonError { message stack }
  }
}
"""


def sensor_selector(dev: DagsterDev, name: str) -> dict[str, str]:
    """The selector of sensor `name`, looked up in the workspace (location and repository names)."""
    answer = dev.graphql(REPOSITORIES_QUERY)["repositoriesOrError"]
    assert answer["__typename"] == "RepositoryConnection", answer
    found = [
        {"repositoryLocationName": repo["location"]["name"], "repositoryName": repo["name"]}
        for repo in answer["nodes"]
        if name in {sensor["name"] for sensor in repo["sensors"]}
    ]
    assert len(found) == 1, answer
    return {**found[0], "sensorName": name}


def sensor_state(dev: DagsterDev, selector: dict) -> dict:
    """The sensor's state (`id`, `status`: RUNNING or STOPPED)."""
    sensor = dev.graphql(SENSOR_QUERY, {"selector": selector})["sensorOrError"]
    assert sensor["__typename"] == "Sensor", sensor
    return sensor["sensorState"]


def start_sensor(dev: DagsterDev, selector: dict) -> dict:
    """What the UI's Start toggle sends; the sensor's state afterwards."""
    started = dev.graphql(START_SENSOR_MUTATION, {"selector": selector})["startSensor"]
    assert started["__typename"] == "Sensor", started
    return started["sensorState"]


def stop_sensor(dev: DagsterDev, state_id: str) -> dict:
    """What the UI's Stop toggle sends; the sensor's state afterwards."""
    stopped = dev.graphql(STOP_SENSOR_MUTATION, {"id": state_id})["stopSensor"]
    assert stopped["__typename"] == "StopSensorMutationResult", stopped
    return stopped["instigationState"]


def ticks(dev: DagsterDev, selector: dict, limit: int = 500) -> list[dict]:
    """The sensor's ticks, newest first."""
    sensor = dev.graphql(TICKS_QUERY, {"selector": selector, "limit": limit})["sensorOrError"]
    assert sensor["__typename"] == "Sensor", sensor
    return sensor["sensorState"]["ticks"]


@dataclass(frozen=True)
class Run:
    """A run of the instance, as the runs page lists it."""

    run_id: str
    status: str
    created: float
    start: float | None
    end: float | None
    assets: tuple[str, ...]
    tags: dict[str, str]

    @property
    def is_observation(self) -> bool:
        """Whether the run only observes archives (the sensor's observations of the archive assets)."""
        return bool(self.assets) and all(asset.startswith("archive/") for asset in self.assets)

    @property
    def days(self) -> str:
        """The run's partition, or its partition range `first..last`."""
        tags = self.tags
        if "dagster/asset_partition_range_start" in tags:
            return (
                f"{tags['dagster/asset_partition_range_start']}..{tags['dagster/asset_partition_range_end']}"
            )
        return tags.get("dagster/partition", "-")

    def describe(self) -> str:
        """One line: id, status, duration, creation time, who launched it, on which tick, what and which days."""
        took = f"{self.end - self.start:.0f}s" if self.start and self.end else "-"
        launched = (
            f"backfill {self.tags[BACKFILL_TAG]}"
            if BACKFILL_TAG in self.tags
            else f"sensor {self.tags.get(SENSOR_TAG, '?')}"
        )
        return (
            f"{self.run_id[:8]} {self.status:<8} {took:>5} {time.strftime('%H:%M:%S', time.gmtime(self.created))} "
            f"{launched}, tick {self.tags.get(TICK_TAG, '?')}: {', '.join(self.assets)} [{self.days}]"
        )


def runs(dev: DagsterDev) -> list[Run]:
    """Every run of the instance, newest first."""
    answer = dev.graphql(RUNS_QUERY)["runsOrError"]
    assert answer["__typename"] == "Runs", answer
    return [
        Run(
            run_id=r["runId"],
            status=r["status"],
            created=r["creationTime"],
            start=r["startTime"],
            end=r["endTime"],
            assets=tuple("/".join(a["path"]) for a in r["assetSelection"] or []),
            tags={t["key"]: t["value"] for t in r["tags"]},
        )
        for r in answer["results"]
    ]


def backfills(dev: DagsterDev) -> list[dict]:
    """Every backfill of the instance (id, status, times, tags, assets)."""
    answer = dev.graphql(BACKFILLS_QUERY)["partitionBackfillsOrError"]
    assert answer["__typename"] == "PartitionBackfills", answer
    return answer["results"]
