"""'Validated' means complete and current: unsettled or gapped days are blocked, stale validations refused,
through Dagster on real tables. The rule of 'settled' itself, no Spark:
unit/events/test_completeness_rule.py.

Each test works on its own copy of the generated archive under its own stream name, so what it breaks
(a removed hour, a late file, an early clock) stays out of every other test's tables.
"""

from __future__ import annotations

import gzip
import json
import shutil

from pyspark.sql import functions as F

from backfill_platform import settings
from backfill_platform.lakehouse.snapshots import current_snapshot_id
from backfill_platform.lakehouse.tables import read_at, snapshot_summary, table_exists
from backfill_platform.pipeline.events.assets import build_events_asset
from backfill_platform.pipeline.ledger.ledger import latest_ingestions, ledger
from backfill_platform.pipeline.names import production_table
from backfill_platform.pipeline.promotion.assets import build_production_asset
from backfill_platform.pipeline.shadow.assets import build_shadow_asset
from backfill_platform_tests.support.datasets import dataset, failed_checks, prod_state, run, settled_by_day
from backfill_platform_tests.support.days import D2, D3, D4, utc
from backfill_platform_tests.support.streams import stream_copy


def test_a_missing_hour_blocks_exactly_the_days_that_read_it(
    truth, data_dir, spark, spark_resource, playback
):
    stream = stream_copy(playback, data_dir, "playback_gap")
    shutil.rmtree(data_dir / "archive" / "playback_gap" / "2026" / "10" / "03" / "05")
    spec = dataset("views_gap", source_stream=stream.name)
    assets = [build_events_asset(stream), build_shadow_asset(spec, [stream], "v2")]
    result = run(spark_resource, [*assets, build_production_asset(spec, [stream])], D2, D4)

    assert not result.success
    settled = settled_by_day(result)
    # Hour 2026-10-03 05:00 feeds D2 (through its lateness) and D3, not D4 (which starts reading at 22:00).
    assert {day for day, c in settled.items() if not c.passed} == {D2.isoformat(), D3.isoformat()}
    assert settled[D2.isoformat()].metadata["missing_hours"].value == "2026-10-03 05:00 to 05:59"
    # The failed days were not materialized; the settled one was.
    materialized = {
        m.event_specific_data.materialization.partition for m in result.get_asset_materialization_events()
    }
    assert materialized == {D4.isoformat()}
    verdicts = latest_ingestions(spark, stream.name, [D2, D3, D4])
    assert {day: v["checks_passed"] for day, v in verdicts.items()} == {
        D2.isoformat(): False,
        D3.isoformat(): False,
        D4.isoformat(): True,
    }
    assert "settled" in verdicts[D2.isoformat()]["failed_checks"]
    # Nothing was promoted: not even D4, the range is held back as a whole.
    assert not table_exists(spark, production_table(spark, spec)) or (
        spark.table(production_table(spark, spec)).count() == 0
    )


def test_an_unsettled_day_is_blocked_or_promoted_as_provisional(
    truth, data_dir, spark, spark_resource, playback, monkeypatch
):
    monkeypatch.setattr(settings, "now", lambda: utc(D4, 3))  # D3 settled at 09:00 on D4; D4 not yet
    stream = stream_copy(playback, data_dir, "playback_fresh")
    blocked = run(spark_resource, [build_events_asset(stream)], D3, D4)
    settled = settled_by_day(blocked)
    assert not settled[D3.isoformat()].passed and not settled[D4.isoformat()].passed
    assert "settles at 2026-10-04 09:00 UTC" in settled[D3.isoformat()].metadata["problem"].value

    monkeypatch.setattr(settings, "now", lambda: utc(D4, 12))  # D3 has settled, D4 has not
    provisional = stream.model_copy(update={"provisional_promotion": True})
    spec = dataset("views_fresh", source_stream=stream.name)
    chain = [
        build_events_asset(provisional),
        build_shadow_asset(spec, [provisional], "v2"),
        build_production_asset(spec, [provisional]),
    ]
    result = run(spark_resource, chain, D3, D4)
    assert result.success, failed_checks(result)
    settled = settled_by_day(result)
    assert settled[D3.isoformat()].passed and not settled[D3.isoformat()].metadata["provisional"].value
    assert settled[D4.isoformat()].passed and settled[D4.isoformat()].metadata["provisional"].value
    rows = {
        r["partition_date"]: r["provisional"]
        for r in ledger(spark, spec.name).where(F.col("promoted_snapshot_id").isNotNull()).collect()
    }
    assert rows == {D3: False, D4: True}
    table = production_table(spark, spec)
    summary = snapshot_summary(spark, table, current_snapshot_id(spark, table))
    assert summary["backfill_platform.provisional-days"] == D4.isoformat()


def test_promotion_refuses_a_validation_of_events_since_rederived(
    truth, data_dir, spark, spark_resource, playback
):
    stream = stream_copy(playback, data_dir, "playback_late")
    spec = dataset("views_late", source_stream=stream.name)
    events, shadow, production = (
        build_events_asset(stream),
        build_shadow_asset(spec, [stream], "v2"),
        build_production_asset(spec, [stream]),
    )
    assert run(spark_resource, [events, shadow, production], D2, D2).success
    before = prod_state(spark, spec)

    # A file arrives late in an hour D2 reads, and D2's events are re-derived; its shadow is not.
    late = [
        {
            "event_id": f"late-{i}",
            "event_time": f"{D2.isoformat()}T07:{i:02d}:00.000Z",
            "user_id": "u000001",
            "title_id": "t0001",
            "event_type": "start",
            "position_sec": 0,
            "device": "web",
        }
        for i in range(3)
    ]
    folder = data_dir / "archive" / stream.name / "2026" / "10" / "02" / "09"
    (folder / "playback-late-0002.jsonl.gz").write_bytes(
        gzip.compress("".join(json.dumps(e) + "\n" for e in late).encode())
    )
    assert run(spark_resource, [events], D2, D2).success

    alone = run(spark_resource, [production], D2, D2)
    assert not alone.success
    error = alone.get_step_failure_events()[0].event_specific_data.error
    failure = error.cause.message if error.cause else error.message
    assert "events changed since shadow v2 was validated" in failure
    assert "re-materialize shadow v2" in failure
    assert prod_state(spark, spec) == before

    # Re-validated, the day promotes, and production counts the late starts of title t0001 at 07:00.
    assert run(spark_resource, [shadow, production], D2, D2).success
    views = (
        spark.table(production_table(spark, spec))
        .where((F.col("title_id") == "t0001") & (F.col("event_hour") == 7) & (F.col("event_date") == D2))
        .agg(F.sum("views"))
        .first()[0]
    )
    previous = (
        read_at(spark, production_table(spark, spec), before[0])
        .where((F.col("title_id") == "t0001") & (F.col("event_hour") == 7) & (F.col("event_date") == D2))
        .agg(F.sum("views"))
        .first()[0]
    )
    assert views == (previous or 0) + 3
