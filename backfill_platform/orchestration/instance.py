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
from backfill_platform.orchestration.dagster_home import write_dagster_home


def data_dagster_home(data: Path | None = None) -> Path:
    """`<data>/dagster` as a DAGSTER_HOME: the repository's dagster.yaml with its storage folders moved
    there (`dagster_home`, which `make` runs too). For the default data directory `./data` the storage is
    `./data/dagster`, where the repository's dagster.yaml puts it."""
    return write_dagster_home((data or settings.data_dir()).resolve() / "dagster")


def instance_from_env() -> DagsterInstance:
    """The instance of DAGSTER_HOME (the run shows in the UI); without it, `<data>/dagster`'s."""
    if os.environ.get("DAGSTER_HOME"):
        return DagsterInstance.get()
    return DagsterInstance.from_config(str(data_dagster_home()))
