"""Secrets are never printed or stored (issue 59, part 1): the review's cases, each through the route that
leaked it. A run's failure is stored in Dagster's event log, so each run case reads the stored events back
and greps every byte of the instance's folder; each CLI case checks the one `Error:` line. The catalog is a
real HTTP server that echoes its request's headers in its error body (`support.hostile.echoing_catalog`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from dagster import DagsterInstance, EnvVar, materialize

from backfill_platform import settings
from backfill_platform.lakehouse.resources import IcebergCatalogResource, SparkIcebergResource
from backfill_platform.pipeline.events.assets import build_events_asset
from backfill_platform_tests.support.hostile import (  # noqa: F401 - nothing_outside is an autouse fixture
    bytes_holding,
    echoing_catalog,
    nothing_outside,
)
from backfill_platform_tests.support.session import START, range_tags

PASSWORD = "issue59-userinfo-password-3f7a"
TOKEN = "issue59-bearer-token-8b2c"
LANDING = "BACKFILL_PLATFORM_ARCHIVE_CATALOG_LANDING_"


def failed_run(tmp_path: Path, spec, catalog: IcebergCatalogResource, secrets: list[str]) -> str:
    """Run the events asset of `spec` on `catalog` in an instance under `tmp_path`; the stored failure's
    text, after checking that no byte of the instance's folder holds any of `secrets`."""
    home = tmp_path / "dagster"
    home.mkdir()
    with DagsterInstance.local_temp(tempdir=str(home)) as instance:
        result = materialize(
            [build_events_asset(spec)],
            resources={"spark": SparkIcebergResource(catalog=catalog)},
            tags=range_tags(START, START),
            instance=instance,
            raise_on_error=False,
        )
        assert not result.success
        stored = "\n".join(str(event) for event in instance.all_logs(result.run_id))
    (failure,) = [event for event in result.all_events if event.is_step_failure]
    message = failure.step_failure_data.error.to_string()
    for secret in secrets:
        assert secret not in stored and secret not in message, message
    assert bytes_holding(home, [secret.encode() for secret in secrets]) == []
    assert not [e for e in result.all_events if e.is_step_materialization]
    return message


@pytest.mark.parametrize("userinfo", [f"admin:{PASSWORD}", PASSWORD])
def test_a_catalog_uri_with_credentials_is_refused_and_never_stored(tmp_path, playback, truth, userinfo):
    with echoing_catalog() as url:
        uri = url.replace("http://", f"http://{userinfo}@")
        message = failed_run(tmp_path, playback, IcebergCatalogResource(rest_uri=uri), [PASSWORD])
    assert f"{settings.CATALOG_URI_ENV} holds credentials before its host (http://***@127.0.0.1:" in message


@pytest.mark.parametrize("token", [f"{TOKEN}\n", f"{TOKEN}\r\nX-Injected: 1"])
def test_a_token_holding_a_line_break_is_refused_by_name(tmp_path, monkeypatch, playback, truth, token):
    monkeypatch.setenv(settings.CATALOG_TOKEN_ENV, token)
    with echoing_catalog() as url:
        catalog = IcebergCatalogResource(rest_uri=url, rest_token=EnvVar(settings.CATALOG_TOKEN_ENV))
        message = failed_run(tmp_path, playback, catalog, [TOKEN])
    assert f"{settings.CATALOG_TOKEN_ENV} (rest_token) holds a control character" in message
    assert "Invalid header value" not in message


def test_a_catalog_that_echoes_the_token_never_gets_it_stored(tmp_path, playback, truth):
    """The token is given inline (not from a variable): masked because the catalog's settings name it."""
    with echoing_catalog() as url:
        message = failed_run(
            tmp_path, playback, IcebergCatalogResource(rest_uri=url, rest_token=TOKEN), [TOKEN]
        )
    assert "answered HTTP 500 to GET" in message and "'Authorization': '***'" in message


# --- the named archive catalogs of Iceberg-table archives (BACKFILL_PLATFORM_ARCHIVE_CATALOG_<NAME>_…) -----


def landing_stream():
    from backfill_platform.components.registry import demo_spec_data
    from backfill_platform.specs.stream import StreamSpec

    raw = demo_spec_data("playback")
    raw["name"] = "landing_secret_probe"
    raw["archive"] = {"iceberg_table": "raw_landing.kc", "payload_column": "payload", "catalog": "landing"}
    return StreamSpec.model_validate(raw)


def platform_catalog(data_dir: Path) -> IcebergCatalogResource:
    return IcebergCatalogResource(
        jdbc_uri=f"jdbc:sqlite:{data_dir}/catalog.db",
        sql_uri=f"sqlite:///{data_dir}/catalog.db",
        warehouse=f"file://{data_dir}/warehouse",
    )


def test_an_archive_catalog_that_echoes_its_token_never_gets_it_stored(tmp_path, monkeypatch, data_dir):
    with echoing_catalog(config_answers=True) as url:
        monkeypatch.setenv(f"{LANDING}URI", url)
        monkeypatch.setenv(f"{LANDING}TOKEN", TOKEN)
        message = failed_run(tmp_path, landing_stream(), platform_catalog(data_dir), [TOKEN])
    # The table call's answer is not repeated at all (it may echo the request): its class is named.
    assert "the catalog answered with an error (ServerError); see the catalog server's log" in message, (
        message
    )


@pytest.mark.parametrize(
    ("setting", "value", "refusal"),
    [
        ("URI", "http://admin:{secret}@127.0.0.1:9", f"{LANDING}URI holds credentials before its host"),
        ("TOKEN", "{secret}\r\nX-Injected: 1", f"{LANDING}TOKEN holds a control character"),
        ("CREDENTIAL", "client:{secret}\nmore", f"{LANDING}CREDENTIAL holds a control character"),
    ],
)
def test_an_archive_catalogs_wrong_setting_is_refused_by_name(
    tmp_path, monkeypatch, data_dir, setting, value, refusal
):
    monkeypatch.setenv(f"{LANDING}URI", "http://127.0.0.1:9")
    monkeypatch.setenv(f"{LANDING}{setting}", value.format(secret=PASSWORD))
    message = failed_run(tmp_path, landing_stream(), platform_catalog(data_dir), [PASSWORD])
    assert refusal in message, message


# --- the command line: one masked line, never a traceback ------------------------------------------------


def cli_error(monkeypatch, tmp_path: Path, env: dict[str, str], *args: str) -> str:
    from backfill_platform.cli import main

    monkeypatch.setenv(settings.DATA_DIR_ENV, str(tmp_path / "data"))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 1, (result.exit_code, result.output)
    assert isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output and result.output.startswith("Error: "), result.output
    return result.output


@pytest.mark.parametrize(("config_answers", "userinfo"), [(False, "admin:{p}"), (True, "{p}")])
def test_the_cli_refuses_a_catalog_uri_with_credentials(tmp_path, monkeypatch, config_answers, userinfo):
    with echoing_catalog(config_answers) as url:
        uri = url.replace("http://", f"http://{userinfo.format(p=PASSWORD)}@")
        output = cli_error(monkeypatch, tmp_path, {settings.CATALOG_URI_ENV: uri}, "status")
    assert "holds credentials before its host (http://***@" in output and PASSWORD not in output


@pytest.mark.parametrize("config_answers", [False, True])
def test_the_cli_never_prints_a_token_the_catalog_echoes(tmp_path, monkeypatch, config_answers):
    with echoing_catalog(config_answers) as url:
        env = {settings.CATALOG_URI_ENV: url, settings.CATALOG_TOKEN_ENV: TOKEN}
        output = cli_error(monkeypatch, tmp_path, env, "status")
    assert TOKEN not in output
    if config_answers:  # a table call's answer is not repeated at all: its class is named
        assert "the Iceberg catalog answered a table call with an error (ServerError)" in output, output
    else:  # the configuration call's answer is quoted, masked
        assert "'Authorization': '***'" in output, output


def test_the_cli_refuses_a_token_holding_a_line_break_by_name(tmp_path, monkeypatch):
    with echoing_catalog(config_answers=True) as url:
        env = {settings.CATALOG_URI_ENV: url, settings.CATALOG_TOKEN_ENV: f"{TOKEN}\n"}
        output = cli_error(monkeypatch, tmp_path, env, "status")
    assert f"{settings.CATALOG_TOKEN_ENV} (rest_token) holds a control character" in output
    assert TOKEN not in output


def test_the_cli_refuses_an_instance_url_with_credentials(tmp_path, monkeypatch):
    with echoing_catalog() as url:
        instance = url.replace("http://", f"http://admin:{PASSWORD}@")
        args = ["backfill", "--dataset", "views_per_title", "--start", "2026-10-01", "--end", "2026-10-02"]
        output = cli_error(monkeypatch, tmp_path, {}, *args, "--instance", instance)
    assert "--instance http://***@127.0.0.1:" in output and PASSWORD not in output
