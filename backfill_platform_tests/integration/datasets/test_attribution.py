"""A dataset joining two streams (seed 003's attribution): real Spark, Iceberg and Dagster runs, checked
against the generator's independent truth, with aligned completeness across sources and a lookback."""

from __future__ import annotations

import gzip
import json
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from backfill_platform.devtools.generator.impressions import attribution_truth
from backfill_platform.lakehouse.resources import open_catalog
from backfill_platform.operations.status import dataset_status
from backfill_platform.pipeline.events.assets import build_events_asset
from backfill_platform.pipeline.ledger.ledger import latest_shadow_rows
from backfill_platform.pipeline.names import production_table, shadow_table
from backfill_platform.pipeline.promotion.assets import build_production_asset
from backfill_platform.pipeline.promotion.promote import promote
from backfill_platform.pipeline.shadow.assets import build_shadow_asset
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.grain import DAILY
from backfill_platform_tests.support.datasets import TRANSFORMS, failed_checks, run
from backfill_platform_tests.support.session import D1, D3, DAYS, START

DAY_KEYS = [(START + timedelta(days=i)).isoformat() for i in range(3)]


@pytest.fixture(scope="module")
def impressions(specs, playback_archive: Path, data_dir: Path, events_materialized, spark_resource):
    """The impressions of the session's plays (archived with them), materialized as events for every day."""
    stream = specs.streams["impressions"]
    assert run(spark_resource, [build_events_asset(stream)], START, START + timedelta(days=DAYS - 1)).success
    return stream


def rows_by_play(spark, table: str) -> dict[str, dict]:
    rows = spark.table(table).where(F.col("play_date").isin(DAY_KEYS)).collect()
    return {r["play_id"]: r.asDict() for r in rows}


def as_truth(row: dict) -> dict:
    return {
        "day": row["play_date"].isoformat(),
        "hour": row["play_hour"],
        "user_id": row["user_id"],
        "title_id": row["title_id"],
        "impression_id": row["impression_id"],
        "seconds_to_play": row["seconds_to_play"],
    }


def expected(truth: dict) -> dict:
    return {play: {k: v for k, v in row.items() if k != "across_midnight"} for play, row in truth.items()}


def test_the_join_equals_an_independent_attribution_across_midnight(
    specs, playback, impressions, playback_archive, data_dir, spark, spark_resource
):
    spec = specs.datasets["attributed_plays"]
    sources = [playback, impressions]
    chain = [build_shadow_asset(spec, sources, "v1"), build_shadow_asset(spec, sources, "v2")]
    result = run(spark_resource, [*chain, build_production_asset(spec, sources)], D1, D3)
    assert result.success, failed_checks(result)

    truth = attribution_truth(playback_archive, data_dir / "archive" / "impressions", DAY_KEYS)
    buggy = attribution_truth(
        playback_archive, data_dir / "archive" / "impressions", DAY_KEYS, same_day_only=True
    )
    across = {play for play, row in truth.items() if row["across_midnight"]}
    assert across, "the generated days must hold plays led by an impression of the day before"
    production = {p: as_truth(r) for p, r in rows_by_play(spark, production_table(spark, spec)).items()}
    assert production == expected(truth)
    v1 = {p: as_truth(r) for p, r in rows_by_play(spark, shadow_table(spark, spec, "v1")).items()}
    assert v1 == expected(buggy)
    assert {p for p in truth if v1[p]["impression_id"] != production[p]["impression_id"]} == across

    # The ledger records what each day read from both sources; the first day has no day before it.
    recorded = latest_shadow_rows(spark, spec.name, "v2", [D1, D3])
    assert recorded[D3.isoformat()]["sources"] == "playback,impressions"
    assert set(dict(i.split("=") for i in recorded[D3.isoformat()]["inputs"].split(";"))) == {
        "impressions",
        "playback",
    }
    checks = {
        (c.check_name, c.partition): c
        for c in result.get_asset_check_evaluations()
        if c.asset_key == build_shadow_asset(spec, sources, "v2").key
    }
    metadata = checks[("events_validated", D3.isoformat())].metadata
    assert metadata["inputs"].value == "playback 2026-10-03, impressions 2026-10-02, impressions 2026-10-03"
    assert (
        metadata["playback_rows"].value + metadata["impressions_rows"].value == metadata["events_rows"].value
    )


def test_a_join_day_is_held_back_by_the_source_day_that_is_not_validated(
    specs, playback, impressions, spark, spark_resource, data_dir
):
    """The impressions of D2 fail their events checks: dataset days D2 (its own) and D3 (its lookback
    reads D2's last 30 minutes) fail `events_validated`, naming impressions and the day; playback alone,
    settled, does not promote them."""
    spec = specs.datasets["attributed_plays"].model_copy(update={"name": "attributed_held"})
    assert spec.name == "attributed_held"
    bad = impressions.model_copy(update={"name": "impressions_held", "max_quarantine_ratio": 0.0})
    archive = data_dir / "archive" / "impressions_held"
    shutil.copytree(data_dir / "archive" / "impressions", archive, dirs_exist_ok=True)
    bad = bad.model_copy(
        update={"archive": bad.archive.model_copy(update={"location": "archive/impressions_held"})}
    )
    # One truncated line in D2's noon hour: quarantined, and above a zero quarantine ratio.
    noon = next(archive.glob("2026/10/02/12/*.jsonl.gz"))
    noon.write_bytes(gzip.compress(gzip.decompress(noon.read_bytes()) + b'{"event_id": "broken\n', mtime=0))
    assert not run(spark_resource, [build_events_asset(bad)], D1, D3).success

    raw = spec.model_dump(exclude_none=True)
    raw["sources"] = ["playback", {"stream": "impressions_held", "lookback": "30m"}]
    raw["versions"]["v2"]["transform"] = f"{TRANSFORMS}:attributed_held"
    renamed = DatasetSpec.model_validate(raw)
    result = run(spark_resource, [build_shadow_asset(renamed, [playback, bad], "v2")], D1, D3)
    verdicts = {
        c.partition: c for c in result.get_asset_check_evaluations() if c.check_name == "events_validated"
    }
    assert verdicts[D1.isoformat()].passed
    for day in (D1 + timedelta(days=1), D3):
        problem = verdicts[day.isoformat()].metadata["problem"].value
        assert not verdicts[day.isoformat()].passed
        assert "impressions_held 2026-10-02: events failed quarantine_ratio" in problem, problem
        assert "playback" not in problem
    assert not spark.catalog.tableExists(production_table(spark, renamed))


def test_the_gate_refuses_the_join_days_whose_inputs_changed_in_one_source(
    specs, playback, impressions, spark, spark_resource, data_dir
):
    """An impression added in D2's last 30 minutes after validation: D2 (its own day) and D3 (its lookback
    reads D2's tail) are refused, naming the source; D1 reads neither and is promoted."""
    stream = impressions.model_copy(
        update={
            "name": "impressions_gate",
            "archive": impressions.archive.model_copy(update={"location": "archive/impressions_gate"}),
        }
    )
    archive = data_dir / "archive" / "impressions_gate"
    shutil.copytree(data_dir / "archive" / "impressions", archive, dirs_exist_ok=True)
    assert run(spark_resource, [build_events_asset(stream)], D1, D3).success
    raw = specs.datasets["attributed_plays"].model_dump(exclude_none=True)
    raw.update(
        name="attributed_gate", sources=["playback", {"stream": "impressions_gate", "lookback": "30m"}]
    )
    raw["versions"] = {"v2": {"transform": f"{TRANSFORMS}:attributed_gate"}}
    spec = DatasetSpec.model_validate(raw)
    assert run(spark_resource, [build_shadow_asset(spec, [playback, stream], "v2")], D1, D3).success

    late = {
        "event_id": "gate-late-0",
        "event_time": "2026-10-02T23:50:00.000Z",
        "user_id": "u000001",
        "title_id": "t0001",
        "row": "trending",
    }
    folder = archive / "2026" / "10" / "02" / "23"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "impressions-2026-10-02-23-late-0002.jsonl.gz").write_bytes(
        gzip.compress((json.dumps(late) + "\n").encode(), mtime=0)
    )
    d2 = D1 + timedelta(days=1)
    assert run(spark_resource, [build_events_asset(stream)], d2, d2).success

    promotion = promote(spark, spec, [playback, stream], D1, D3 + timedelta(days=1), per_day=True)
    assert promotion.partitions == [D1.isoformat()]
    assert sorted(promotion.held_back) == [d2.isoformat(), D3.isoformat()]
    for reason in promotion.held_back.values():
        assert "the events of impressions_gate changed since shadow v2 was validated" in reason, reason
    # `backfill-platform status` says the same, from the ledger alone.
    states = {s.key: s for s in dataset_status(open_catalog(), spec, dict.fromkeys(spec.stream_names, DAILY))}
    assert states[D1.isoformat()].state == "promoted"
    for day in (d2, D3):
        assert states[day.isoformat()].state == "stale"
        assert states[day.isoformat()].detail.startswith("impressions_gate 2026-10-02 re-derived in run")
