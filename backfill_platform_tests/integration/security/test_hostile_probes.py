"""Probes of the boundary (issue 30) where Spark is the point, spec SQL and secrets: Spark's `${…}`
substitution stays off whatever a session's settings ask, the ledger's lookups take values as data, never as
SQL, and no run of a hostile spec stores a secret. The checks on a rule's text before Spark gets it (no
Spark): unit/specs/test_expressions.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from backfill_platform_tests.support.hostile import nothing_outside  # noqa: F401 - an autouse fixture

# --- SQL: data, not code -------------------------------------------------------------------------


def test_spark_substitutes_no_variable_even_when_asked_to(spark, spark_resource):
    """Spark's `${…}` substitution is off in the platform's sessions, whatever `spark_config` says."""
    from pyspark.sql import functions as F

    asked = spark_resource.model_copy(update={"spark_config": {"spark.sql.variable.substitute": "true"}})
    assert asked.full_spark_config()["spark.sql.variable.substitute"] == "false"
    assert spark.conf.get("spark.sql.variable.substitute") == "false"
    spark._jvm.java.lang.System.setProperty("issue30.fake.secret", "fake-secret-30")
    row = spark.range(1).select(F.expr("'${system:issue30.fake.secret}'").alias("v")).first()
    assert row.v == "${system:issue30.fake.secret}"
    assert (
        spark.sql("SELECT '${system:issue30.fake.secret}' AS v").first().v == "${system:issue30.fake.secret}"
    )


def test_ledger_lookups_with_quotes_are_values_not_sql(spark, data_dir):
    from datetime import date

    from backfill_platform.pipeline.ledger.ledger import latest_ingestions, latest_shadow_rows, ledger

    hostile = "x' OR '1'='1"
    assert latest_ingestions(spark, hostile, [date(2026, 10, 1)]) == {}
    assert latest_shadow_rows(spark, hostile, "v2' --", [date(2026, 10, 1)]) == {}
    assert ledger(spark, hostile).count() == 0


# --- secrets never stored ------------------------------------------------------------------------

FAKE_SECRETS = {
    "AWS_ACCESS_KEY_ID": "AKIAISSUE30FAKEKEYID",
    "AWS_SECRET_ACCESS_KEY": "issue30-fake-aws-secret-0f9e8d7c6b5a",
    "AWS_SESSION_TOKEN": "issue30-fake-session-token-1a2b3c",
    "BACKFILL_PLATFORM_CATALOG_PASSWORD": "issue30-fake-catalog-password-4d5e",
}


def bytes_holding(folder: Path, secrets: list[bytes]) -> list[str]:
    """Every file below `folder` whose bytes hold one of `secrets`."""
    found = []
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            found += [f"{path}: {secret!r}" for secret in secrets if secret in data]
    return found


@pytest.mark.timeout(900)
def test_a_run_of_a_hostile_spec_stores_no_secret(
    tmp_path, monkeypatch, spark, spark_resource, data_dir, playback, events_materialized
):
    """A dataset built in code (past the loader) whose rules try Spark's substitution: the run refuses
    them, and no byte written by it (data directory, Dagster's run and event storage) holds a secret."""
    from dagster import DagsterInstance, materialize

    from backfill_platform.pipeline.shadow.assets import build_shadow_asset
    from backfill_platform_tests.support.datasets import dataset as views_dataset
    from backfill_platform_tests.support.session import START, range_tags

    for name, value in FAKE_SECRETS.items():
        monkeypatch.setenv(name, value)
    # The JVM's environment was fixed when it started; a system property stands for a secret it holds.
    spark._jvm.java.lang.System.setProperty("issue30.secret", FAKE_SECRETS["AWS_SECRET_ACCESS_KEY"])
    rules = [
        {"column": "views", "filter": "event_type = '${system:issue30.secret}'", "expression": "count(1)"},
        {
            "column": "watch_seconds",
            "filter": "event_type = '${env:AWS_SECRET_ACCESS_KEY}'",
            "expression": "sum(position_sec)",
        },
    ]
    spec = views_dataset("views_secret_probe", reconciliation=rules)
    (tmp_path / "dagster").mkdir()
    with DagsterInstance.local_temp(tempdir=str(tmp_path / "dagster")) as instance:
        result = materialize(
            [build_shadow_asset(spec, [playback], "v2")],
            resources={"spark": spark_resource},
            tags=range_tags(START, START),
            instance=instance,
            raise_on_error=False,
        )
        logs = "\n".join(str(event) for event in instance.all_logs(result.run_id))
    assert "a rule of the dataset is refused: contains a variable substitution ('${')" in logs
    secrets = [value.encode() for value in FAKE_SECRETS.values()]
    assert not any(secret in logs.encode() for secret in secrets)
    assert bytes_holding(tmp_path / "dagster", secrets) == []
    assert bytes_holding(data_dir, secrets) == []
    spark._jvm.java.lang.System.clearProperty("issue30.secret")
