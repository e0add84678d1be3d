"""A DAGSTER_HOME under a data directory: the repository's dagster.yaml with its storage folders moved there.

The one place that moves them, for the CLI (`instance.data_dagster_home`), `make` (which runs this module
with the system Python while it reads the Makefile, before any environment exists: standard library only)
and the tests' own instances: `python -m backfill_platform.orchestration.dagster_home HOME`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# The repository's dagster.yaml: its storage folders (`base_dir: data/dagster...`) are relative to the
# working directory of each Dagster process.
REPO_DAGSTER_YAML = Path(__file__).resolve().parents[2] / "dagster.yaml"
REPO_STORAGE = "base_dir: data/dagster"


def relocated_dagster_yaml(home: Path) -> str:
    """The repository's dagster.yaml with every storage folder under `home` (absolute); without the
    repository (an installed package), Dagster's defaults with the storage there."""
    home = home.resolve()
    if REPO_DAGSTER_YAML.exists():
        return REPO_DAGSTER_YAML.read_text().replace(REPO_STORAGE, f"base_dir: {home}")
    return f"storage:\n  sqlite:\n    base_dir: {home}\ntelemetry:\n  enabled: false\n"


def write_dagster_home(home: Path) -> Path:
    """Make `home` a DAGSTER_HOME whose storage is its own; the file is replaced only when it changed,
    and atomically (several processes may start at once)."""
    home.mkdir(parents=True, exist_ok=True)
    text = relocated_dagster_yaml(home)
    target = home / "dagster.yaml"
    if not target.exists() or target.read_text() != text:
        scratch = home / f".dagster.yaml.{os.getpid()}"
        scratch.write_text(text)
        scratch.replace(target)
    return home


if __name__ == "__main__":
    write_dagster_home(Path(sys.argv[1]))
