"""A wrong lakehouse setting fails before anything is read or written, naming the setting and the endpoint.

Against real endpoints: the session's moto S3 and a REST catalog server of this module (`rest_catalog`).
Each case is the settings a user could get wrong: an unreachable catalog, a URL that is no REST catalog, a
missing bucket, missing credentials, two catalogs at once. Two runs of the events asset through Dagster:
with an unreachable catalog the step fails with the same message before its Spark session starts; with a
catalog that refuses its warehouse (a REST server whose own warehouse is a bucket that does not exist: the
server, not the client, decides where tables go) the step fails at the first table it would create, naming
the catalog, the table and the server's reason. Neither writes anything (no materialization, no object in
the bucket, no table in the catalog).
"""

from __future__ import annotations

import os
import subprocess

import pytest
from dagster import materialize

from backfill_platform import settings
from backfill_platform.devtools.rest_catalog.server import rest_catalog_server
from backfill_platform.lakehouse.preflight import LakehouseConfigError, check_lakehouse
from backfill_platform.lakehouse.resources import IcebergCatalogResource, SparkIcebergResource
from backfill_platform.orchestration.dagster_home import write_dagster_home
from backfill_platform.pipeline.events.assets import build_events_asset
from backfill_platform_tests.conftest import REST_WAREHOUSE_BUCKET
from backfill_platform_tests.support.lakehouse import own_data_dir
from backfill_platform_tests.support.moto import aws_environment
from backfill_platform_tests.support.processes import free_port
from backfill_platform_tests.support.session import DAGSTER_CLI, REPO_ROOT, START, range_tags


def rest(uri: str, warehouse: str, moto) -> IcebergCatalogResource:
    return IcebergCatalogResource(
        rest_uri=uri,
        warehouse=warehouse,
        s3_endpoint=moto.endpoint_url,
        s3_region=moto.region,
        s3_path_style=True,
    )


def error_of(catalog: IcebergCatalogResource) -> str:
    with pytest.raises(LakehouseConfigError) as raised:
        check_lakehouse(catalog, timeout=5)
    return str(raised.value)


def test_a_reachable_rest_catalog_and_bucket_pass(rest_catalog, moto):
    with aws_environment(moto):
        check_lakehouse(rest(rest_catalog.uri, rest_catalog.warehouse, moto))


def test_an_unreachable_catalog_is_named(moto):
    uri = f"http://127.0.0.1:{free_port()}"
    with aws_environment(moto):
        message = error_of(rest(uri, f"s3://{REST_WAREHOUSE_BUCKET}/x", moto))
    assert settings.CATALOG_URI_ENV in message and uri in message and "cannot be reached" in message


def test_a_url_that_is_no_rest_catalog_is_named(moto):
    with aws_environment(moto):
        message = error_of(rest(moto.endpoint_url, f"s3://{REST_WAREHOUSE_BUCKET}/x", moto))
    assert moto.endpoint_url in message and settings.CATALOG_URI_ENV in message


def test_a_missing_bucket_is_named(rest_catalog, moto):
    with aws_environment(moto):
        message = error_of(rest(rest_catalog.uri, "s3://no-such-bucket/lake", moto))
    assert "no-such-bucket" in message and "does not exist" in message
    assert settings.WAREHOUSE_ENV in message and moto.endpoint_url in message


def test_missing_credentials_are_named(rest_catalog, moto, monkeypatch, tmp_path):
    with aws_environment(moto):
        for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
        monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
        monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
        message = error_of(rest(rest_catalog.uri, rest_catalog.warehouse, moto))
    assert "no AWS credentials" in message and rest_catalog.warehouse in message


def test_two_catalogs_at_once_are_refused(moto):
    catalog = IcebergCatalogResource(rest_uri="http://127.0.0.1:1", jdbc_uri="jdbc:sqlite:/tmp/x.db")
    message = error_of(catalog)
    assert settings.CATALOG_URI_ENV in message and settings.CATALOG_JDBC_URI_ENV in message


def test_a_run_on_an_unreachable_catalog_fails_before_writing(playback, truth, rest_catalog, moto):
    uri = f"http://127.0.0.1:{free_port()}"
    catalog = rest(uri, f"s3://{REST_WAREHOUSE_BUCKET}/never", moto)
    with aws_environment(moto):
        result = materialize(
            [build_events_asset(playback)],
            resources={"spark": SparkIcebergResource(catalog=catalog)},
            tags=range_tags(START, START),
            raise_on_error=False,
        )
    assert not result.success
    (failure,) = [event for event in result.all_events if event.is_step_failure]
    message = failure.step_failure_data.error.to_string()
    assert uri in message and settings.CATALOG_URI_ENV in message
    assert not [e for e in result.all_events if e.is_step_materialization]
    listed = moto.client("s3").list_objects_v2(Bucket=REST_WAREHOUSE_BUCKET, Prefix="never/")
    assert listed.get("KeyCount", 0) == 0


def test_a_warehouse_the_catalog_refuses_fails_the_run_before_writing(
    playback_archive, rest_catalog, moto, tmp_path
):
    """In a process of its own (`dagster asset materialize`), as a user runs it: this process's Spark
    session already has its catalog."""
    server_warehouse = "s3://no-such-bucket/warehouse"
    data = own_data_dir(tmp_path / "data", playback_archive)
    home = tmp_path / "dagster_home"
    home.mkdir()
    write_dagster_home(home)
    with rest_catalog_server(
        tmp_path / "refusing",
        server_warehouse,
        s3_endpoint=moto.endpoint_url,
        region=moto.region,
        env={**os.environ, **moto.env()},
    ) as server:
        # The client's warehouse is a bucket that exists: the preflight passes, the server refuses.
        env = {
            **os.environ,
            **moto.env(),
            settings.DATA_DIR_ENV: str(data),
            settings.CATALOG_URI_ENV: server.uri,
            settings.WAREHOUSE_ENV: f"s3://{REST_WAREHOUSE_BUCKET}/refused",
            "DAGSTER_HOME": str(home),
        }
        command = [str(DAGSTER_CLI), "asset", "materialize", "-m", "backfill_platform.definitions"]
        command += ["--select", "raw/playback_events", "--partition", START.isoformat()]
        ran = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
        with aws_environment(moto):
            catalog = rest(server.uri, f"s3://{REST_WAREHOUSE_BUCKET}/refused", moto).load()
            tables = catalog.list_tables("raw") if ("raw",) in catalog.list_namespaces() else []
    output = ran.stdout + ran.stderr
    assert ran.returncode != 0, output[-3000:]
    message = next((line for line in output.splitlines() if "LakehouseConfigError: " in line), output[-3000:])
    assert server.uri in message and settings.CATALOG_URI_ENV in message, message
    assert "refused to create lake.raw.playback_" in message and "no-such-bucket" in message, message
    assert tables == []
    listed = moto.client("s3").list_objects_v2(Bucket=REST_WAREHOUSE_BUCKET, Prefix="refused/")
    assert listed.get("KeyCount", 0) == 0
