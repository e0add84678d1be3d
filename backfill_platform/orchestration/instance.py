"""The Dagster instance the platform's commands record in.

DAGSTER_HOME when it is set (the instance the UI shows); otherwise `<BACKFILL_PLATFORM_DATA>/dagster`,
so that a second data directory (a second lakehouse) keeps its own run history rather than mixing it
with the first one's.
"""

from __future__ import annotations

import os
from pathlib import Path

from dagster import DagsterInstance

from backfill_platform import settings

# The repository's dagster.yaml: its storage folders (`base_dir: data/dagster...`) are relative to the
# working directory; `data_dagster_home` writes a copy with them under the data directory.
REPO_DAGSTER_YAML = Path(__file__).resolve().parents[2] / "dagster.yaml"
REPO_STORAGE = "base_dir: data/dagster"


def data_dagster_home(data: Path | None = None) -> Path:
    """`<data>/dagster` as a DAGSTER_HOME: the repository's dagster.yaml with its storage folders moved
    there (absolute). `make` writes the same file (Makefile, DAGSTER_HOME). For the default data
    directory `./data` the storage is `./data/dagster`, where the repository's dagster.yaml puts it."""
    home = (data or settings.data_dir()).resolve() / "dagster"
    home.mkdir(parents=True, exist_ok=True)
    if REPO_DAGSTER_YAML.exists():
        text = REPO_DAGSTER_YAML.read_text().replace(REPO_STORAGE, f"base_dir: {home}")
    else:  # an installed package without the repository: storage only, Dagster's defaults otherwise
        text = f"storage:\n  sqlite:\n    base_dir: {home}\ntelemetry:\n  enabled: false\n"
    target = home / "dagster.yaml"
    if not target.exists() or target.read_text() != text:
        scratch = home / f".dagster.yaml.{os.getpid()}"
        scratch.write_text(text)
        scratch.replace(target)
    return home


def instance_from_env() -> DagsterInstance:
    """The instance of DAGSTER_HOME (the run shows in the UI); without it, `<data>/dagster`'s."""
    if os.environ.get("DAGSTER_HOME"):
        return DagsterInstance.get()
    return DagsterInstance.from_config(str(data_dagster_home()))
