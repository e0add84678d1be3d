"""The code location loads, with the lineage and partitions the UI shows."""

from __future__ import annotations

from datetime import UTC, datetime

from dagster import AllPartitionMapping, AssetKey, BackfillPolicy, partition_loading_context
from dagster._core.definitions.partitions.utils import infer_partition_mapping
from dagster._core.remote_representation.external_data import RepositorySnap
from dagster._serdes import deserialize_value, serialize_value

from backfill_platform.definitions import defs
from backfill_platform.pipeline.source_window_mapping import LocalDaysMapping

NOW = datetime(2026, 11, 28, 12, tzinfo=UTC)


def test_definitions_load_with_archive_to_events_lineage(data_dir):
    definitions = defs()
    graph = definitions.resolve_asset_graph()
    events = AssetKey(["raw", "playback_events"])
    archive = AssetKey(["archive", "playback_archive"])
    assert graph.get(events).parent_keys == {archive}
    assert graph.get(archive).is_observable
    node = graph.get(events)
    assert node.partitions_def.get_partition_keys()[0] == "2026-10-01"
    assert node.backfill_policy == BackfillPolicy.single_run()
    assert {"spark", "iceberg"} <= set(node.kinds)
    checks = {key.name for key in graph.asset_check_keys if key.asset_key == events}
    assert checks == {"reconciliation", "quarantine_ratio", "schema", "records_present", "settled"}
    specs = [graph.get_check_spec(k) for k in graph.asset_check_keys if k.asset_key == events]
    # Blocking, and partitioned: each day of a range run gets its own verdict.
    assert all(s.blocking and s.partitions_def == node.partitions_def for s in specs)


def test_dataset_lineage_feeds_production_from_the_active_version(data_dir):
    definitions = defs()
    graph = definitions.resolve_asset_graph()
    events = AssetKey(["raw", "playback_events"])
    v1, v2 = AssetKey(["shadow", "views_per_title__v1"]), AssetKey(["shadow", "views_per_title__v2"])
    production = AssetKey(["prod", "views_per_title_production"])
    assert graph.get(v1).parent_keys == graph.get(v2).parent_keys == {events}
    assert graph.get(production).parent_keys == {v2}  # active_version: v2
    shadow_checks = {k.name for k in graph.asset_check_keys if k.asset_key == v2}
    assert shadow_checks == {
        "events_validated",
        "row_counts_per_bucket",
        "checksums_per_bucket",
        "schema",
        "divergence_vs_production",
        "erasure_honored",
    }
    # Divergence from production is a warning (a run may set a bound); every other check blocks.
    blocking = {k.name: graph.get_check_spec(k).blocking for k in graph.asset_check_keys if k.asset_key == v2}
    assert blocking == {name: name != "divergence_vs_production" for name in shadow_checks}
    # Only the active version is on the production path's group; others are kept apart.
    assert graph.get(v2).group_name == graph.get(production).group_name == "views_per_title"
    assert graph.get(v1).group_name == "views_per_title_other_versions"
    # What the UI says of each: only the active version feeds production.
    assert "production is promoted from it." in graph.get(v2).description
    assert "(active: feeds production)" in graph.get(v2).description
    assert "promoted from the active version's shadow (v2), not from this one" in graph.get(v1).description
    assert "(active" not in graph.get(v1).description
    assert {k.name for k in graph.asset_check_keys if k.asset_key == production} == {"promotion_verified"}
    assert definitions.get_job_def("revert_promotion_job") is not None


def test_the_three_table_assets_share_one_partitioned_spark_shape(data_dir):
    """Events, shadows and production: daily partitions, per-day blocking checks, one Spark run per range."""
    definitions = defs()
    graph = definitions.resolve_asset_graph()
    pools = {
        AssetKey(["raw", "playback_events"]): "ingest_playback",
        AssetKey(["shadow", "views_per_title__v1"]): None,
        AssetKey(["shadow", "views_per_title__v2"]): None,
        AssetKey(["prod", "views_per_title_production"]): "promote_views_per_title",
    }
    for key, pool in pools.items():
        node, assets = graph.get(key), definitions.get_assets_def(key)
        assert node.partitions_def.get_partition_keys()[0] == "2026-10-01"
        assert node.backfill_policy == BackfillPolicy.single_run()
        assert set(node.kinds) == {"spark", "iceberg"}
        assert assets.can_subset and assets.op.pool == pool
        assert [spec.skippable for spec in assets.specs] == [True]
        specs = [graph.get_check_spec(k) for k in graph.asset_check_keys if k.asset_key == key]
        assert specs, f"no check on {key.to_user_string()}"
        assert all(s.partitions_def == node.partitions_def and s.description for s in specs)
        assert all(s.blocking for s in specs if s.key.name != "divergence_vs_production")
        assert {s.key for s in specs} == set(assets.check_keys)


def test_every_edge_dagster_host_side_reads_can_be_walked_both_ways(data_dir):
    """What the webserver and the backfill daemon read: the code location's snapshot, where a mapping that is
    not built into Dagster is missing and Dagster infers its own. Every edge of that graph maps its parent's
    partitions to the child's and back without raising; the local days' edge (UTC hours under New York days,
    which Dagster's inferred time-window mapping refuses) is read there as `AllPartitionMapping`. In the code
    location the same edge is the exact window."""
    repository = defs().get_repository_def()
    snap = deserialize_value(serialize_value(RepositorySnap.from_def(repository)), RepositorySnap)
    nodes = {node.asset_key: node for node in snap.asset_nodes}
    local_days = AssetKey(["shadow", "plays_new_york__v1"])
    hourly = AssetKey(["raw", "playback_hourly_events"])
    walked = 0
    for node in snap.asset_nodes:
        for edge in node.parent_edges:
            parent = nodes[edge.parent_asset_key]
            if node.partitions is None or parent.partitions is None:
                continue
            child_def = node.partitions.get_partitions_definition()
            parent_def = parent.partitions.get_partitions_definition()
            host = infer_partition_mapping(edge.partition_mapping, child_def, parent_def)
            if (node.asset_key, edge.parent_asset_key) == (local_days, hourly):
                assert type(host) is AllPartitionMapping
            with partition_loading_context(NOW):
                down = host.get_downstream_partitions_for_partitions(
                    parent_def.subset_with_partition_keys(parent_def.get_partition_keys()[-48:]),
                    parent_def,
                    child_def,
                )
                host.get_upstream_mapped_partitions_result_for_partitions(down, child_def, parent_def)
            walked += 1
    assert walked > 10

    exact = defs().resolve_asset_graph().get_partition_mapping(local_days, hourly)
    assert isinstance(exact, LocalDaysMapping) and exact == LocalDaysMapping()
    # 2026-11-01, the day New York leaves summer time, is 25 hours: 04:00 UTC to 05:00 UTC the next day.
    child_def = defs().resolve_asset_graph().get(local_days).partitions_def
    parent_def = defs().resolve_asset_graph().get(hourly).partitions_def
    with partition_loading_context(NOW):
        hours = exact.get_upstream_mapped_partitions_result_for_partitions(
            child_def.subset_with_partition_keys(["2026-11-01"]), child_def, parent_def
        ).partitions_subset.get_partition_keys()
    assert (len(hours), hours[0], hours[-1]) == (25, "2026-11-01-04:00", "2026-11-02-04:00")
