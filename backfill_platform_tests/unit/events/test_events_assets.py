"""The events asset's identity (pipeline/events/assets.py): its key is the events table's name."""

from __future__ import annotations

from dagster import AssetKey

from backfill_platform.pipeline.names import events_key


def test_events_key_mirrors_table(playback):
    assert events_key(playback) == AssetKey(["raw", "playback_events"])
