"""Session fixtures: one data directory, one Spark session, one generated archive for the whole run.

The session's catalog (under `data_dir`) is written by this process only. Tests whose subprocesses commit
(marker `other_writers`: CLI runs, `dagster dev`'s runs) give them a data directory of their own and read it
back through a new Spark session bound to it (`support.lakehouse`), so they may run in any order: see
`make test TEST_ORDER=random` (pytest-randomly) and `TEST_ORDER=reverse` (`--reverse`, below).
Helpers the test modules share are in `support/`. The folder is the layer: every test under `unit/` is
marked `unit` (`make test-fast` runs them), and no test elsewhere may carry that mark.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from backfill_platform import settings
from backfill_platform_tests.support import workers
from backfill_platform_tests.support.lakehouse import own_data_dir
from backfill_platform_tests.support.session import DAYS, EVENTS_PER_DAY, START, range_tags

OTHER_WRITERS = "other_writers"
UNIT = "unit"
# The unit layer's folder: every test below it is marked `UNIT` (`mark_unit_layer`), and no other test is.
UNIT_DIR = Path(__file__).parent / "unit"
# `make test-fast` sets it: the unit layer, where a test asking for Spark or a server fails (it is not a unit).
LAYER_ENV = "BACKFILL_PLATFORM_TEST_LAYER"
_TZ_PATCH = pytest.StashKey[pytest.MonkeyPatch]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--reverse",
        action="store_true",
        default=False,
        help="Run the collected tests in reverse order (modules, and the tests of each module).",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{OTHER_WRITERS}: the test's subprocesses commit to a catalog (a data directory of the test's own)",
    )
    config.addinivalue_line(
        "markers",
        f"{UNIT}: a test under unit/ (set by its folder, never by hand): pure logic, no Spark, server or"
        " subprocess run (`make test-fast`, seconds)",
    )
    workers.configure(config)
    # PySpark hands timestamps to Python as naive local time; the platform and its tests speak UTC.
    # Set for the whole session (before any Spark starts), restored when it ends.
    patch = pytest.MonkeyPatch()
    patch.setenv("TZ", "UTC")
    time.tzset()
    config.stash[_TZ_PATCH] = patch


def pytest_unconfigure(config: pytest.Config) -> None:
    workers.unconfigure(config)
    patch = config.stash.get(_TZ_PATCH, None)
    if patch is not None:
        patch.undo()
        time.tzset()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """How the two workers of `make test` share the tests: support/workers.py."""
    return workers.make_scheduler(config, log)


def mark_unit_layer(items: list[pytest.Item]) -> None:
    """The folder is the layer: every test under `unit/` gets the `unit` marker; a test elsewhere that
    carries it by hand is refused (move it under `unit/`, or drop the mark), naming each such test."""
    misplaced = []
    for item in items:
        if item.path.is_relative_to(UNIT_DIR):
            item.add_marker(UNIT)
        elif item.get_closest_marker(UNIT) is not None:
            misplaced.append(item.nodeid)
    if misplaced:
        raise pytest.UsageError(
            f"the marker `{UNIT}` is set by the folder (backfill_platform_tests/unit/), never by hand; "
            f"these tests outside it carry it: {', '.join(misplaced)}"
        )


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]):
    """Before any other plugin's implementation (so `-m unit` selects by it): the `unit` marker from the
    folder (`mark_unit_layer`). After all of them: `--reverse`, the opposite of the order the tests were
    collected in (a check that none depends on it; pytest-randomly, `-p randomly`, shuffles instead). In
    file order, the long groups first; with workers, each test's group for the scheduler
    (support/workers.py)."""
    mark_unit_layer(items)
    result = yield
    if config.getoption("reverse"):
        items.reverse()
    workers.order_and_publish(config, items)
    return result


@pytest.fixture(scope="session", autouse=True)
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's data directory (BACKFILL_PLATFORM_DATA for every test, restored at the end): the
    embedded tier's catalog, warehouse and archive that in-process code finds through the environment."""
    path = tmp_path_factory.mktemp("data")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(settings.DATA_DIR_ENV, str(path))
        yield path


@pytest.fixture(scope="module")
def archive_roots_in_tmp(tmp_path_factory: pytest.TempPathFactory):
    """The operator allows archives anywhere under pytest's temporary folders (BACKFILL_PLATFORM_ARCHIVE_ROOTS)
    for one module whose archives are in `tmp_path`: `pytestmark = pytest.mark.usefixtures(...)`."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(settings.ARCHIVE_ROOTS_ENV, str(tmp_path_factory.getbasetemp()))
        yield


# The S3 buckets the end-to-end tests keep archives in (moto's), as an operator lists them.
TEST_ARCHIVE_BUCKETS = (
    "firehose-archive firehose-private no-such-bucket-here my-bucket my.bucket-1 bucket kafka-connect-sink "
    "team-archive"
)


@pytest.fixture(scope="module")
def s3_archive_buckets():
    """The operator allows archives in the tests' S3 buckets (BACKFILL_PLATFORM_ARCHIVE_S3_BUCKETS) for one
    module: `pytestmark = pytest.mark.usefixtures("s3_archive_buckets")`."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(settings.ARCHIVE_S3_BUCKETS_ENV, TEST_ARCHIVE_BUCKETS)
        yield


@pytest.fixture(scope="session")
def catalog(data_dir: Path):
    from backfill_platform.lakehouse.resources import catalog_from_env

    return catalog_from_env()


def refuse_in_unit_layer(what: str) -> None:
    """In `make test-fast`, a test that asks for `what` is not a unit: it fails, naming it."""
    if os.environ.get(LAYER_ENV) == "fast":
        pytest.fail(
            f"the unit layer (make test-fast) starts no {what}: this test belongs in integration/ or"
            " end_to_end/, not unit/"
        )


@pytest.fixture(scope="session")
def spark_resource(catalog):
    from backfill_platform.lakehouse.resources import spark_from_env

    refuse_in_unit_layer("Spark")
    return spark_from_env(catalog)


@pytest.fixture(scope="session")
def spark(spark_resource):
    return spark_resource.spark_session


@pytest.fixture(scope="session")
def specs(data_dir: Path):
    """The demo project's specs as every entrance reads them (`components.registry`)."""
    from backfill_platform.components.registry import package_project, project_specs

    return project_specs(package_project())


@pytest.fixture(scope="session")
def playback(specs):
    return specs.streams["playback"]


@pytest.fixture(scope="session")
def truth(data_dir: Path) -> dict:
    """A small generated playback archive (DAYS days) and the generator's exact truth for it, with the
    impressions of its plays beside it (the built-in `impressions` stream: the join's second source)."""
    from backfill_platform.devtools.generator.impressions import generate_impressions_archive
    from backfill_platform.devtools.generator.playback import GeneratorConfig, generate_playback_archive

    config = GeneratorConfig(start=START, days=DAYS, events_per_day=EVENTS_PER_DAY, seed=11)
    truth = generate_playback_archive(data_dir / "archive" / "playback", config)
    generate_impressions_archive(data_dir / "archive" / "impressions", data_dir / "archive" / "playback")
    return truth


@pytest.fixture(scope="session")
def playback_archive(truth, data_dir: Path) -> Path:
    """The generated archive's folder. Tests only read it (or copy it)."""
    return data_dir / "archive" / "playback"


@pytest.fixture(scope="session")
def events_materialized(truth, playback, spark_resource):
    """The whole generated range materialized through Dagster, in one run. Tests only read its tables."""
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
def dagster_dev_data(playback_archive: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The data directory of the session's `dagster dev` (a copy of the generated archives, playback and
    impressions): its runs commit to its own catalog, never to the test process's."""
    import shutil

    root = own_data_dir(tmp_path_factory.mktemp("dagster_dev_data"), playback_archive)
    shutil.copytree(playback_archive.parent / "impressions", root / "archive" / "impressions")
    return root


@pytest.fixture(scope="session")
def dagster_dev_specs(dagster_dev_data: Path) -> list[dict]:
    """The streams and datasets `dagster dev` serves besides the demo's: the gap stream and dataset, and the
    whole copy test_cli_instance.py submits.

    A test module that needs another stream or dataset in the UI adds it here; the webserver reads
    its project once, at start.
    """
    from backfill_platform_tests.support.dagster_dev import (
        GAP_DATASET,
        GAP_HOUR,
        GAP_STREAM,
        SUBMIT_DATASET,
        SUBMIT_STREAM,
    )
    from backfill_platform_tests.support.streams import stream_copy_specs

    return [
        *stream_copy_specs(dagster_dev_data, GAP_STREAM, GAP_DATASET, drop_hours=[GAP_HOUR]),
        *stream_copy_specs(dagster_dev_data, SUBMIT_STREAM, SUBMIT_DATASET, drop_hours=[]),
    ]


@pytest.fixture(scope="session")
def dagster_dev_project(dagster_dev_specs: list[dict], tmp_path_factory: pytest.TempPathFactory):
    """The project `dagster dev` serves, as a team's: the demo's components and `dagster_dev_specs`."""
    from backfill_platform_tests.support.projects import write_project

    return write_project(
        tmp_path_factory.mktemp("dagster_dev_project"), dagster_dev_specs, name="ui", demo=True
    )


@pytest.fixture(scope="session")
def dagster_dev(dagster_dev_data: Path, dagster_dev_project, tmp_path_factory: pytest.TempPathFactory):
    """`dagster dev` on a free loopback port, its own DAGSTER_HOME and its own data directory."""
    refuse_in_unit_layer("dagster dev")
    from backfill_platform_tests.support.dagster_dev import dagster_dev_server
    from backfill_platform_tests.support.projects import write_workspace

    workspace = write_workspace(dagster_dev_project)
    with dagster_dev_server(dagster_dev_data, tmp_path_factory.mktemp("dagster_dev_home"), workspace) as dev:
        yield dev


@pytest.fixture(scope="session")
def views_backfill(dagster_dev) -> dict:
    """events → shadow v2 → production of `views_per_title` and of the join `attributed_plays` over
    VIEWS_BACKFILL_DAYS, launched through GraphQL as the UI does and waited for; the final
    `partitionBackfillOrError` (any end status). It writes the demo tables of `dagster dev`'s own
    lakehouse; the tests only read what it did."""
    from backfill_platform_tests.support.dagster_dev import (
        JOIN_BACKFILL_ASSETS,
        VIEWS_BACKFILL_ASSETS,
        VIEWS_BACKFILL_DAYS,
        VIEWS_BACKFILL_TAGS,
    )
    from backfill_platform_tests.support.dagster_graphql import launch_backfill, wait_for_backfill

    backfill_id = launch_backfill(
        dagster_dev,
        VIEWS_BACKFILL_ASSETS + JOIN_BACKFILL_ASSETS,
        VIEWS_BACKFILL_DAYS,
        title=f"views_per_title v2, {len(VIEWS_BACKFILL_DAYS)} days, through GraphQL",
        tags=VIEWS_BACKFILL_TAGS,
    )
    return wait_for_backfill(dagster_dev, backfill_id)


# --- one moto server (S3 and Kinesis on loopback) for the S3 archive and replay tests ---------------


@pytest.fixture(scope="session")
def moto(tmp_path_factory: pytest.TempPathFactory):
    """moto's HTTP server on 127.0.0.1; `moto.env()` is the environment boto3 needs to reach it."""
    refuse_in_unit_layer("moto server")
    from backfill_platform_tests.support.moto import moto_server

    with moto_server(tmp_path_factory.mktemp("moto")) as server:
        yield server


# --- Iceberg's REST catalog server, its warehouse in moto's S3 -----------------------------------------

REST_WAREHOUSE_BUCKET = "lakehouse"


@pytest.fixture(scope="module")
def rest_catalog(moto, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """Apache Iceberg's REST catalog server on a free port for one test module (its tables are the
    platform's fixed names, so a module that writes them has a catalog of its own: it starts in ~2 s), its
    warehouse `s3://lakehouse/<module>` in the session's moto S3. The server reaches moto with moto's dummy
    credentials, as a team's server reaches its bucket with its role's."""
    from backfill_platform.devtools.rest_catalog.server import rest_catalog_server

    s3 = moto.client("s3")
    if REST_WAREHOUSE_BUCKET not in {bucket["Name"] for bucket in s3.list_buckets()["Buckets"]}:
        s3.create_bucket(Bucket=REST_WAREHOUSE_BUCKET)
    module = request.module.__name__.rsplit(".", 1)[-1]
    with rest_catalog_server(
        tmp_path_factory.mktemp(f"rest_catalog_{module}"),
        f"s3://{REST_WAREHOUSE_BUCKET}/{module}",
        s3_endpoint=moto.endpoint_url,
        region=moto.region,
        env={**os.environ, **moto.env()},
    ) as server:
        yield server


# --- Apache Kafka's broker (KRaft, one node) -------------------------------------------------------------


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory):
    """A single-node Kafka broker on a free loopback port for one test module (formatted afresh: ~5 s)."""
    refuse_in_unit_layer("Kafka broker")
    from backfill_platform.devtools.kafka_broker.broker import kafka_broker

    with kafka_broker(tmp_path_factory.mktemp("kafka")) as broker:
        yield broker
