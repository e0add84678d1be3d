"""The code location loads, with the lineage and partitions the UI shows."""

from __future__ import annotations

from dagster import AssetKey
from dagster._core.definitions.backfill_policy import BackfillPolicyType

from backfill_platform.definitions import defs


def test_definitions_load_with_archive_to_events_lineage(data_dir):
    definitions = defs()
    graph = definitions.resolve_asset_graph()
    events = AssetKey(["raw", "playback_events"])
    archive = AssetKey(["archive", "playback"])
    assert graph.get(events).parent_keys == {archive}
    assert graph.get(archive).is_observable
    node = graph.get(events)
    assert node.partitions_def.get_partition_keys()[0] == "2026-10-01"
    assert node.backfill_policy.policy_type == BackfillPolicyType.SINGLE_RUN
    assert {"spark", "iceberg"} <= set(node.kinds)
    checks = {key.name for key in graph.asset_check_keys if key.asset_key == events}
    assert checks == {"reconciliation", "quarantine_ratio", "schema"}
    assert all(graph.get_check_spec(k).blocking for k in graph.asset_check_keys if k.asset_key == events)
