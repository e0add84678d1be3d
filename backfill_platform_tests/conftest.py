"""Session fixtures: one data directory, one Spark session, one generated archive for the whole run."""

from __future__ import annotations

import os
import time
from datetime import date
from pathlib import Path

import pytest

from backfill_platform import settings

# PySpark hands timestamps to Python as naive local time; the platform and its tests speak UTC.
os.environ["TZ"] = "UTC"
time.tzset()

START = date(2026, 10, 1)
DAYS = 5
EVENTS_PER_DAY = 2000


OTHER_WRITERS = "other_writers"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{OTHER_WRITERS}: the test's subprocesses commit to the shared catalog"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run tests whose subprocesses commit to the catalog after every in-process writer.

    Once another process has committed, this session's pooled SQLite-JDBC connection can fail its next
    write with SQLITE_BUSY_SNAPSHOT (see the README's known limits); those tests only read afterwards.
    """
    items.sort(key=lambda item: item.get_closest_marker(OTHER_WRITERS) is not None)


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every test talks to the same embedded tier, under a temporary data directory."""
    path = tmp_path_factory.mktemp("data")
    os.environ[settings.DATA_DIR_ENV] = str(path)
    return path


@pytest.fixture(scope="session")
def catalog(data_dir: Path):
    from backfill_platform.lakehouse.resources import catalog_from_env

    return catalog_from_env()


@pytest.fixture(scope="session")
def spark_resource(catalog):
    from backfill_platform.lakehouse.resources import spark_from_env

    return spark_from_env(catalog)


@pytest.fixture(scope="session")
def spark(spark_resource):
    return spark_resource.spark_session


@pytest.fixture(scope="session")
def specs(data_dir: Path):
    from backfill_platform.specs.loader import load_specs

    return load_specs()


@pytest.fixture(scope="session")
def playback(specs):
    return specs.streams["playback"]


@pytest.fixture(scope="session")
def truth(data_dir: Path) -> dict:
    """A small generated playback archive (DAYS days) and the generator's exact truth for it."""
    from backfill_platform.devtools.generator.playback import GeneratorConfig, generate_playback_archive

    config = GeneratorConfig(start=START, days=DAYS, events_per_day=EVENTS_PER_DAY, seed=11)
    return generate_playback_archive(data_dir / "archive" / "playback", config)


def range_tags(first: date, last: date, **extra: str) -> dict[str, str]:
    return {
        "dagster/asset_partition_range_start": first.isoformat(),
        "dagster/asset_partition_range_end": last.isoformat(),
        **extra,
    }


@pytest.fixture(scope="session")
def events_materialized(truth, playback, spark_resource):
    """The whole generated range materialized through Dagster, in one run."""
    from datetime import timedelta

    from dagster import materialize

    from backfill_platform.pipeline.events.assets import build_events_asset

    result = materialize(
        [build_events_asset(playback)],
        resources={"spark": spark_resource},
        tags=range_tags(START, START + timedelta(days=DAYS - 1)),
    )
    assert result.success
    return result


# --- one `dagster dev` (webserver + daemon) for every end-to-end UI/GraphQL test of the session -------


@pytest.fixture(scope="session")
def dagster_dev_specs(truth, data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The extra spec folder `dagster dev` loads (BACKFILL_PLATFORM_SPECS): the gap stream and dataset.

    A test module that needs another stream or dataset in the UI adds it here; the webserver reads
    its specs once, at start.
    """
    from backfill_platform_tests.dagster_dev import (
        GAP_DATASET,
        GAP_HOUR,
        GAP_STREAM,
        SUBMIT_DATASET,
        SUBMIT_STREAM,
        write_stream_copy,
    )

    folder = tmp_path_factory.mktemp("dagster_dev_specs")
    write_stream_copy(folder, data_dir, GAP_STREAM, GAP_DATASET, drop_hours=[GAP_HOUR])
    write_stream_copy(folder, data_dir, SUBMIT_STREAM, SUBMIT_DATASET, drop_hours=[])
    return folder


@pytest.fixture(scope="session")
def dagster_dev(truth, data_dir: Path, dagster_dev_specs: Path, tmp_path_factory: pytest.TempPathFactory):
    """`dagster dev` on a free loopback port, its own DAGSTER_HOME, the session's data directory."""
    from backfill_platform_tests.dagster_dev import dagster_dev_server

    with dagster_dev_server(
        data_dir, tmp_path_factory.mktemp("dagster_dev_home"), [dagster_dev_specs]
    ) as dev:
        yield dev


@pytest.fixture(scope="session")
def views_backfill(dagster_dev) -> dict:
    """events → shadow v2 → production of `views_per_title` over VIEWS_BACKFILL_DAYS, launched through
    GraphQL as the UI does and waited for; the final `partitionBackfillOrError` (any end status)."""
    from backfill_platform_tests.dagster_dev import (
        VIEWS_BACKFILL_ASSETS,
        VIEWS_BACKFILL_DAYS,
        VIEWS_BACKFILL_TAGS,
        launch_backfill,
        wait_for_backfill,
    )

    backfill_id = launch_backfill(
        dagster_dev,
        VIEWS_BACKFILL_ASSETS,
        VIEWS_BACKFILL_DAYS,
        title=f"views_per_title v2, {len(VIEWS_BACKFILL_DAYS)} days, through GraphQL",
        tags=VIEWS_BACKFILL_TAGS,
    )
    return wait_for_backfill(dagster_dev, backfill_id)


# --- one moto server (S3 and Kinesis on loopback) for the S3 archive and replay tests ---------------


@pytest.fixture(scope="session")
def moto(tmp_path_factory: pytest.TempPathFactory):
    """moto's HTTP server on 127.0.0.1; `moto.env()` is the environment boto3 needs to reach it."""
    from backfill_platform_tests.moto_server import moto_server

    with moto_server(tmp_path_factory.mktemp("moto")) as server:
        yield server
