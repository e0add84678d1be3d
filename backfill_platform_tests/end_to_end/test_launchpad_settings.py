"""What a run is told, as the launchpad shows it: the settings of `pipeline/run_settings.py` are fields of
the config of the assets that read them, with their descriptions and "not set" defaults, asked of a real
`dagster dev` (the session's `dagster_dev` fixture) over the GraphQL the UI speaks: each asset's
`configField`, and the asset job's run config schema, which the launchpad's editor completes from
(`rootConfigType`) and validates what is typed into it with (`isRunConfigValid`). Last, an asset backfill
launched with run config (`runConfigData`, as the launchpad sends it) and a tag that disagrees: its run
is refused naming both, before it reads or writes anything."""

import json

import pytest

from backfill_platform.operations.read_back import events_over_graphql
from backfill_platform.operations.submit import LAUNCH_MUTATION
from backfill_platform.pipeline.run_settings import (
    DIVERGENCE_DESCRIPTION,
    PARTITIONS_BEFORE_DESCRIPTION,
    POLICY_DESCRIPTION,
    PROMOTION_POLICY_TAG,
)
from backfill_platform_tests.support.dagster_dev import VIEWS_BACKFILL_DAYS, DagsterDev
from backfill_platform_tests.support.dagster_graphql import wait_for_backfill

pytestmark = pytest.mark.other_writers

EVENTS = ["raw", "playback_events"]
SHADOW = ["shadow", "views_per_title__v2"]
PRODUCTION = ["prod", "views_per_title_production"]
# A version no other test of the session's server runs: its refused run fails no partition they count.
OTHER_SHADOW = ["shadow", "views_per_title__v1"]
POLICIES = ["all_or_nothing", "per_day"]

TYPE = "key ... on EnumConfigType { values { value } } ... on NullableConfigType { ofType { key ... on EnumConfigType { values { value } } } }"
ASSET_CONFIG_QUERY = f"""
query AssetConfig($assetKey: AssetKeyInput!) {{
  assetNodeOrError(assetKey: $assetKey) {{
    __typename
    ... on AssetNode {{
      opNames
      repository {{ name location {{ name }} }}
      configField {{
        configType {{
          ... on CompositeConfigType {{
            fields {{ name description isRequired defaultValueAsJson configType {{ {TYPE} }} }}
          }}
        }}
      }}
    }}
  }}
}}
"""
FIELDS = "... on CompositeConfigType { fields { name description configType { %s } } }"
# The launchpad's editor: the root type, its `ops`, each op, its `config`, the settings.
ROOT_TYPE = FIELDS % (FIELDS % (FIELDS % (FIELDS % "key")))
RUN_CONFIG_QUERY = """
query RunConfig($selector: PipelineSelector!, $runConfigData: RunConfigData) {
  runConfigSchemaOrError(selector: $selector) {
    __typename
    ... on RunConfigSchema {
      rootConfigType { ROOT_TYPE }
      isRunConfigValid(runConfigData: $runConfigData) {
        __typename
        ... on RunConfigValidationInvalid { errors { message } }
      }
    }
    ... on PythonError { message }
  }
}
""".replace("ROOT_TYPE", ROOT_TYPE)


def asset_config(dev: DagsterDev, path: list[str]) -> dict:
    answer = dev.graphql(ASSET_CONFIG_QUERY, {"assetKey": {"path": path}})["assetNodeOrError"]
    assert answer["__typename"] == "AssetNode", answer
    return answer


def fields_of(node: dict) -> dict[str, dict]:
    return {field["name"]: field for field in node["configField"]["configType"]["fields"]}


def enum_values(field: dict) -> list[str]:
    """The words the launchpad offers for an optional enum field."""
    return [value["value"] for value in field["configType"]["ofType"]["values"]]


@pytest.mark.parametrize(
    ("path", "described"),
    [
        (
            EVENTS,
            {"promotion_policy": POLICY_DESCRIPTION, "partitions_before": PARTITIONS_BEFORE_DESCRIPTION},
        ),
        (SHADOW, {"promotion_policy": POLICY_DESCRIPTION, "max_divergence_ratio": DIVERGENCE_DESCRIPTION}),
        (PRODUCTION, {"promotion_policy": POLICY_DESCRIPTION}),
    ],
)
def test_each_asset_shows_the_settings_it_reads_with_their_descriptions_and_unset_defaults(
    dagster_dev: DagsterDev, path: list[str], described: dict[str, str]
) -> None:
    fields = fields_of(asset_config(dagster_dev, path))
    assert {name: field["description"] for name, field in fields.items()} == described
    assert {(f["isRequired"], f["defaultValueAsJson"]) for f in fields.values()} == {(False, "null")}
    assert enum_values(fields["promotion_policy"]) == POLICIES


def run_config(dev: DagsterDev, path: list[str], config: dict | None) -> dict:
    """The asset job's run config schema for `path` alone, validating `config` given to its op."""
    node = asset_config(dev, path)
    selector = {
        "repositoryLocationName": node["repository"]["location"]["name"],
        "repositoryName": node["repository"]["name"],
        "pipelineName": "__ASSET_JOB",
        "assetSelection": [{"path": path}],
    }
    run_config_data = {"ops": {node["opNames"][0]: {"config": config}}} if config is not None else {}
    variables = {"selector": selector, "runConfigData": run_config_data}
    answer = dev.graphql(RUN_CONFIG_QUERY, variables)["runConfigSchemaOrError"]
    assert answer["__typename"] == "RunConfigSchema", answer
    return answer


def test_the_launchpad_editor_offers_the_settings_and_accepts_only_what_they_can_take(
    dagster_dev: DagsterDev,
) -> None:
    unset = run_config(dagster_dev, SHADOW, None)
    assert unset["isRunConfigValid"]["__typename"] == "PipelineConfigValidationValid"
    root = {field["name"]: field["configType"] for field in unset["rootConfigType"]["fields"]}
    (op,) = root["ops"]["fields"]
    (config,) = op["configType"]["fields"]
    shown = {field["name"]: field["description"] for field in config["configType"]["fields"]}
    assert shown == {"promotion_policy": POLICY_DESCRIPTION, "max_divergence_ratio": DIVERGENCE_DESCRIPTION}

    good = {"promotion_policy": "per_day", "max_divergence_ratio": 0.05}
    assert run_config(dagster_dev, SHADOW, good)["isRunConfigValid"]["__typename"] == (
        "PipelineConfigValidationValid"
    )
    assert run_config(dagster_dev, EVENTS, {"partitions_before": 1})["isRunConfigValid"]["__typename"] == (
        "PipelineConfigValidationValid"
    )
    for path, wrong, named in (
        (PRODUCTION, {"promotion_policy": "per-day"}, "per-day"),
        (EVENTS, {"partitions_before": "one"}, "partitions_before"),
        (PRODUCTION, {"max_divergence_ratio": 0.1}, "max_divergence_ratio"),  # not a production setting
    ):
        invalid = run_config(dagster_dev, path, wrong)["isRunConfigValid"]
        assert invalid["__typename"] == "RunConfigValidationInvalid", (path, wrong, invalid)
        assert named in json.dumps(invalid["errors"]), invalid


def test_an_asset_backfills_config_reaches_its_run_and_a_tag_that_disagrees_is_refused(
    dagster_dev: DagsterDev,
) -> None:
    op = asset_config(dagster_dev, OTHER_SHADOW)["opNames"][0]
    params = {
        "assetSelection": [{"path": OTHER_SHADOW}],
        "partitionNames": VIEWS_BACKFILL_DAYS[:1],
        "tags": [{"key": PROMOTION_POLICY_TAG, "value": "all_or_nothing"}],
        "title": "run settings: a config and a tag that disagree",
        "runConfigData": {"ops": {op: {"config": {"promotion_policy": "per_day"}}}},
    }
    launched = dagster_dev.graphql(LAUNCH_MUTATION, {"params": params})["launchPartitionBackfill"]
    assert launched["__typename"] == "LaunchBackfillSuccess", launched
    backfill = wait_for_backfill(dagster_dev, launched["backfillId"])
    (run,) = backfill["runs"]
    assert run["status"] == "FAILURE", backfill
    (failure,) = events_over_graphql(dagster_dev.client, run["runId"]).step_failures
    # `<step>: <the exception's class>: <its message>`, as the run's page shows it.
    assert failure.startswith(f"{op}: ") and failure.endswith(
        f"RunSettingsError: run tag {PROMOTION_POLICY_TAG} says 'all_or_nothing' and the asset's config says "
        "'per_day': give one, or the same value in both"
    ), failure
