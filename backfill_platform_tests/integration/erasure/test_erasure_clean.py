"""Erasure after the fact (`erase`, `erasure-purge`, `erasure-audit`, `revert`): rows written before a
request leave the events, shadow and production tables at once, their quarantined lines lose their text,
a purge leaves no retained snapshot holding them, the audit proves it, and a revert never brings them back.

Everything is read back from the tables, at every retained snapshot. Requests are scoped to this module's
own stream copy, so no other test's runs honor them.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from backfill_platform.components.registry import demo_spec_data
from backfill_platform.lakehouse.snapshots import iceberg_table
from backfill_platform.lakehouse.tables import read_at
from backfill_platform.pipeline.events.assets import build_events_asset
from backfill_platform.pipeline.names import events_table, production_table, quarantine_table, shadow_table
from backfill_platform_tests.support.cli import invoke
from backfill_platform_tests.support.datasets import promotion_chain, run
from backfill_platform_tests.support.projects import load_project, write_project
from backfill_platform_tests.support.session import START

STREAM, HELD, AGGREGATED = "playback_erased", "viewer_plays_erased", "views_erased"
LAST = START + timedelta(days=1)


def _specs() -> list[dict]:
    """A copy of the demo's stream, a dataset that holds subjects per row and one that aggregates them away."""
    stream = demo_spec_data("playback")
    stream.update(name=STREAM, archive={**stream["archive"], "location": f"archive/{STREAM}"})
    held = {
        "kind": "dataset",
        "name": HELD,
        "source_stream": STREAM,
        "partition_column": "event_date",
        "bucket_column": "event_hour",
        "key_columns": ["event_date", "event_hour", "user_id", "title_id"],
        "columns": {
            "event_date": "date",
            "event_hour": "int",
            "user_id": "string",
            "title_id": "string",
            "plays": "long",
        },
        "versions": {"v1": {"transform": "backfill_platform_tests.erasure_transforms:plays_per_viewer"}},
        "active_version": "v1",
        "expected_rows": {
            "filter": "event_type = 'start'",
            "expression": "count(DISTINCT user_id, title_id)",
        },
        "reconciliation": [{"column": "plays", "filter": "event_type = 'start'", "expression": "count(1)"}],
    }
    aggregated = demo_spec_data("views_per_title")
    aggregated.update(name=AGGREGATED, source_stream=STREAM)
    return [stream, held, aggregated]


@pytest.fixture(scope="module")
def erased(truth, data_dir: Path, spark, spark_resource, tmp_path_factory):
    """The stream copy ingested and both datasets promoted before any request; then two subjects erased
    through the CLI (one with a quarantined line when the archive has one). Yields (subjects, output)."""
    import shutil

    shutil.copytree(data_dir / "archive" / "playback", data_dir / "archive" / STREAM, dirs_exist_ok=True)
    project = write_project(tmp_path_factory.mktemp("erasure_project"), _specs())
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(project.root)  # the CLI reads the project of its working directory, as `dg` does
        specs = load_project(project)
        stream = specs.streams[STREAM]
        assets = [build_events_asset(stream)]
        for name in (HELD, AGGREGATED):
            assets += promotion_chain(specs.datasets[name], stream)
        assert run(spark_resource, assets, START, LAST).success
        quarantined = (
            spark.table(quarantine_table(spark, stream))
            .select(F.get_json_object("line", "$.user_id").alias("u"))
            .where(F.col("u").isNotNull())
            .first()
        )
        top = (
            spark.table(events_table(spark, stream))
            .groupBy("user_id")
            .count()
            .orderBy(F.desc("count"))
            .first()
        )
        subjects = sorted({top["user_id"], (quarantined or top)[0]} | set())
        if len(subjects) < 2:
            second = spark.table(events_table(spark, stream)).where(F.col("user_id") != subjects[0]).first()
            subjects.append(second["user_id"])
        args = [a for s in subjects for a in ("--subject", s)]
        result = invoke(
            "erase", "--stream", STREAM, *args, "--reason", "test: two subjects", "--request-id", "T-1"
        )
        assert result.exit_code == 0, result.output
        yield specs, subjects, result.output, quarantined is not None


def _tables(spark, specs) -> list[str]:
    stream, held = specs.streams[STREAM], specs.datasets[HELD]
    return [events_table(spark, stream), shadow_table(spark, held, "v1"), production_table(spark, held)]


def _subject_rows(spark, identifier: str, subjects: list[str], snapshot: int | None = None) -> int:
    return read_at(spark, identifier, snapshot).where(F.col("user_id").isin(subjects)).count()


def test_erase_cleans_forward_and_prints_no_subject(erased, spark):
    specs, subjects, output, with_quarantine = erased
    assert not any(s in output for s in subjects)
    assert "T-1-1" in output and "T-1-2" in output
    for identifier in _tables(spark, specs):
        assert _subject_rows(spark, identifier, subjects) == 0, identifier
        assert spark.table(identifier).count() > 0
        assert identifier in output
    # The aggregated dataset is named with the command that re-derives it.
    assert f"backfill-platform backfill --dataset {AGGREGATED} --start" in output
    quarantine = spark.table(quarantine_table(spark, specs.streams[STREAM]))
    for subject in subjects:
        assert quarantine.where(F.col("line").contains(subject)).count() == 0
    if with_quarantine:
        stripped = quarantine.where(F.col("line").isNull())
        assert stripped.where(F.col("_source_file").isNotNull() & F.col("reason").isNotNull()).count() > 0


def test_a_revert_after_the_clean_is_not_refused_and_brings_nothing_back(erased, spark):
    """Before the purge (which expires the promotion's history, and with it what a revert restores)."""
    specs, subjects, _, _ = erased
    result = invoke("revert", "--dataset", HELD, "--reason", "test: revert after erasure")
    assert result.exit_code == 0, result.output
    assert _subject_rows(spark, production_table(spark, specs.datasets[HELD]), subjects) == 0


def test_audit_names_the_old_snapshots_then_purge_leaves_none(erased, spark):
    specs, subjects, _, _ = erased
    before = invoke("erasure-audit")
    assert before.exit_code == 0, before.output  # hits are pending, not past the bound
    assert "hit: " in before.output and "purged by" in before.output
    assert f"{AGGREGATED}: aggregates the subject away" in before.output
    purged = invoke("erasure-purge")
    assert purged.exit_code == 0, purged.output
    for identifier in _tables(spark, specs):
        snapshots = [int(s.snapshotId()) for s in iceberg_table(spark, identifier).snapshots()]
        assert snapshots
        for snapshot in snapshots:
            assert _subject_rows(spark, identifier, subjects, snapshot) == 0, (identifier, snapshot)
    after = invoke("erasure-audit")
    assert after.exit_code == 0 and "zero hits" in after.output, after.output
