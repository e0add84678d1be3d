"""The code location loads, with the lineage and partitions the UI shows."""

from __future__ import annotations

from dagster import AssetKey, BackfillPolicy

from backfill_platform.definitions import defs


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
