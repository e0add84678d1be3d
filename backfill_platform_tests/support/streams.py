"""Copies of the session's generated playback archive, declared as streams of another name.

A stream of its own has its own events, quarantine and dataset tables: what a test breaks there (a removed
hour, a late file, rows deleted from its events) stays out of every other test's tables.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from backfill_platform.components.registry import demo_spec_data
from backfill_platform.specs.stream import StreamSpec


def stream_copy(playback: StreamSpec, data_dir: Path, name: str, **changes) -> StreamSpec:
    """The generated archive copied under `archive/<name>`, declared as a stream of that name."""
    target = data_dir / "archive" / name
    if not target.exists():
        shutil.copytree(data_dir / "archive" / "playback", target)
    archive = playback.archive.model_copy(update={"location": f"archive/{name}"})
    return playback.model_copy(update={"name": name, "archive": archive, **changes})


def stream_copy_specs(
    data_dir: Path, stream: str, dataset: str, drop_hours: list[tuple[str, ...]]
) -> list[dict]:
    """The generated playback archive copied to `archive/<stream>` without `drop_hours` (each
    (Y, m, d, H) folder); the specs declaring it as stream `stream`, and the demo dataset on it as
    `dataset`, for a project (`support/projects.py`)."""
    target = data_dir / "archive" / stream
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(data_dir / "archive" / "playback", target)
    for hour in drop_hours:
        shutil.rmtree(target.joinpath(*hour))
    return stream_specs(stream, dataset, f"archive/{stream}")


def stream_specs(stream: str, dataset: str, location: str) -> list[dict]:
    """The demo stream declared as `stream` with its archive at `location` (a data-directory path or
    `s3://bucket/prefix`), and the demo dataset on it as `dataset`: a team's two components."""
    stream_spec = demo_spec_data("playback")
    stream_spec["name"] = stream
    stream_spec["archive"]["location"] = location
    dataset_spec = demo_spec_data("views_per_title")
    dataset_spec["name"] = dataset
    dataset_spec["source_stream"] = stream
    return [stream_spec, dataset_spec]
