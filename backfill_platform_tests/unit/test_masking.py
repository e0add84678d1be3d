"""The one masking function (`masking.py`, issue 59): what it hides in a message, and what it leaves alone."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from dagster import DagsterInstance, Failure, asset, materialize

from backfill_platform.masking import (
    MASK,
    control_characters_refused,
    has_userinfo,
    mask,
    mask_exception,
)
from backfill_platform.pipeline.spark_asset import masked_errors


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("cannot reach http://admin:pw-59-a@127.0.0.1:8181/v1/config", "pw-59-a"),
        ("for url: http://tok-59-b@127.0.0.1:8181/v1/namespaces", "tok-59-b"),
        ("postgresql+psycopg://team:p@ss-59@db:5432/lake", "p@ss-59"),
        ("jdbc:postgresql://db/lake?user=team&password=pw-59-c", "pw-59-c"),
        ("{'Authorization': 'Bearer tok-59-d', 'Accept': '*/*'}", "tok-59-d"),
        ('{"authorization": "Basic dXNlcjpwdy01OQ=="}', "dXNlcjpwdy01OQ=="),
        ("Invalid header value b'Bearer tok-59-e\\n'", "tok-59-e"),
        ("spark.sql.catalog.lake.token=tok-59-f", "tok-59-f"),
    ],
)
def test_urls_headers_and_settings_are_masked(text, secret):
    masked = mask(text)
    assert secret not in masked and MASK in masked, masked


def test_a_secret_variables_value_is_masked_wherever_it_appears_also_in_pieces(monkeypatch):
    monkeypatch.setenv("BACKFILL_PLATFORM_ARCHIVE_CATALOG_LANDING_TOKEN", "first-59-piece\r\nsecond-59-piece")
    monkeypatch.setenv("BACKFILL_PLATFORM_CATALOG_CREDENTIAL", "client-59:credential-secret-59")
    text = "echo: 'first-59-piece\\r\\nsecond-59-piece' then credential-secret-59 and first-59-piece"
    masked = mask(text)
    for secret in ("first-59-piece", "second-59-piece", "credential-secret-59"):
        assert secret not in masked, masked


def test_named_secrets_are_masked_and_ordinary_words_are_not():
    assert mask("the server said sesame-59-open", ["sesame-59-open"]) == f"the server said {MASK}"
    plain = (
        "set BACKFILL_PLATFORM_CATALOG_TOKEN to a bearer token, or an Authorization header; "
        "s3://lakehouse/warehouse at http://127.0.0.1:8181 (HTTP 500)"
    )
    assert mask(plain) == plain


def test_userinfo_is_told_apart_from_a_plain_url():
    assert has_userinfo("http://a:b@host:1") and has_userinfo("https://token@host")
    assert not has_userinfo("http://127.0.0.1:8181") and not has_userinfo("http://host/a@b")


@pytest.mark.parametrize("value", ["tok-59\n", "tok\r\n-59", "tok\x1b59", "\ttok"])
def test_a_control_character_is_refused_by_name_never_by_value(value):
    refused = control_characters_refused("BACKFILL_PLATFORM_CATALOG_TOKEN", value)
    assert refused is not None and refused.startswith("BACKFILL_PLATFORM_CATALOG_TOKEN holds a control")
    assert "tok" not in refused
    assert control_characters_refused("BACKFILL_PLATFORM_CATALOG_TOKEN", "tok-59") is None


def test_an_exception_and_its_causes_are_masked_in_place():
    try:
        try:
            raise OSError("http://admin:pw-59-g@host refused")
        except OSError as inner:
            raise RuntimeError("{'Authorization': 'Bearer tok-59-h'}") from inner
    except RuntimeError as raised:
        error = raised
    assert mask_exception(error) is error and "tok-59-h" not in str(error)
    assert "pw-59-g" not in str(error.__cause__)


def test_a_step_error_is_masked_before_dagster_stores_it(tmp_path, monkeypatch):
    """Every stage's step crosses `spark_asset.masked_errors`: whatever raised inside it (a client quoting a
    URL with credentials, a catalog echoing the request's headers, a `Failure` built from such a text), the
    run's event log and every byte of the instance's storage hold the masked text, never the secret."""
    monkeypatch.setenv("BACKFILL_PLATFORM_CATALOG_TOKEN", "tok-59-boundary")

    # Texts built at run time, as a client builds them (a traceback quotes the raising line's source).
    answer = "500 from http://admin:" + "pw-59-url" + "@127.0.0.1:8181 echoing Bearer " + "tok-59-boundary"
    headers = "load failed: {'Authorization': 'Bearer " + "tok-59-boundary" + "'}"

    def cause() -> Iterator:
        raise RuntimeError(answer)
        yield  # a generator, as every stage's step is

    def failure() -> Iterator:
        raise Failure(description=headers)
        yield

    for compute in (cause, failure):
        step = asset(name=compute.__name__)(masked_errors(compute))
        with DagsterInstance.ephemeral(tempdir=str(tmp_path / compute.__name__)) as instance:
            result = materialize([step], instance=instance, raise_on_error=False)
            assert not result.success
            errors = [e.event_specific_data.error for e in result.all_events if e.is_step_failure]
            text = " ".join(error.to_string() for error in errors)
            descriptions = [
                e.event_specific_data.user_failure_data.description
                for e in result.all_events
                if e.is_step_failure and e.event_specific_data.user_failure_data
            ]
            assert MASK in text + " ".join(descriptions)
        stored = b"".join(p.read_bytes() for p in (tmp_path / compute.__name__).rglob("*") if p.is_file())
        for secret in ("pw-59-url", "tok-59-boundary"):
            assert secret not in text and secret.encode() not in stored, secret
            assert all(secret not in d for d in descriptions)
