"""Copies of the session's generated playback archive, declared as streams of another name.

A stream of its own has its own events, quarantine and dataset tables: what a test breaks there (a removed
hour, a late file, rows deleted from its events) stays out of every other test's tables.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from backfill_platform.specs.loader import builtin_spec_data
from backfill_platform.specs.stream import StreamSpec


def stream_copy(playback: StreamSpec, data_dir: Path, name: str, **changes) -> StreamSpec:
    """The generated archive copied under `archive/<name>`, declared as a stream of that name."""
    target = data_dir / "archive" / name
    if not target.exists():
        shutil.copytree(data_dir / "archive" / "playback", target)
    archive = playback.archive.model_copy(update={"location": f"archive/{name}"})
    return playback.model_copy(update={"name": name, "archive": archive, **changes})


def write_stream_copy(
    specs_dir: Path, data_dir: Path, stream: str, dataset: str, drop_hours: list[tuple[str, ...]]
) -> None:
    """The generated playback archive copied to `archive/<stream>` without `drop_hours` (each
    (Y, m, d, H) folder), declared as stream `stream`, and the demo dataset on it as `dataset`."""
    target = data_dir / "archive" / stream
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(data_dir / "archive" / "playback", target)
    for hour in drop_hours:
        shutil.rmtree(target.joinpath(*hour))
    write_stream_specs(specs_dir, stream, dataset, f"archive/{stream}")


def write_stream_specs(specs_dir: Path, stream: str, dataset: str, location: str) -> None:
    """The demo stream declared as `stream` with its archive at `location` (a data-directory path or
    `s3://bucket/prefix`), and the demo dataset on it as `dataset`: a team's spec folder."""
    stream_spec = builtin_spec_data("playback")
    stream_spec["name"] = stream
    stream_spec["archive"]["location"] = location
    dataset_spec = builtin_spec_data("views_per_title")
    dataset_spec["name"] = dataset
    dataset_spec["source_stream"] = stream
    specs_dir.mkdir(parents=True, exist_ok=True)
    (specs_dir / f"{stream}.yaml").write_text(yaml.safe_dump(stream_spec, sort_keys=False))
    (specs_dir / f"{dataset}.yaml").write_text(yaml.safe_dump(dataset_spec, sort_keys=False))
