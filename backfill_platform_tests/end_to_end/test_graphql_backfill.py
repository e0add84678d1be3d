"""A backfill launched through the webserver's GraphQL API, as the UI does, end to end.

A real `dagster dev` (webserver + daemon, the session's `dagster_dev` fixture) serves the repository's
workspace with its own Dagster instance. The `views_backfill` fixture launches a partition backfill of
events → shadow v2 → production of `views_per_title` for three days with `launchPartitionBackfill` and
polls `partitionBackfillOrError` until the daemon marks it done; this test checks that the whole range
ran as one run, then reads the ledger and the tables of `dagster dev`'s lakehouse back with a Spark
session of this process bound to it: the range was re-derived, checked and promoted in one production
commit that names the backfill, its reason and its ticket. The same backfill holds the join
`attributed_plays`, whose lookback reads impressions of the day before the range (ingested in the same run)
and whose day after the range is read only through that lookback: it is neither run nor reported failed.
"""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from backfill_platform.lakehouse.tables import read_at
from backfill_platform.operations.submit import asset_statuses
from backfill_platform.pipeline.promotion.promote import ACTION, RANGE_END, RANGE_START
from backfill_platform.pipeline.shadow.checks import CHECK_DESCRIPTIONS
from backfill_platform_tests.support.dagster_dev import (
    JOIN_BACKFILL_ASSETS,
    JOIN_DAY_AFTER,
    JOIN_DAY_BEFORE,
    VIEWS_BACKFILL_DAYS,
    VIEWS_BACKFILL_TAGS,
)
from backfill_platform_tests.support.dagster_graphql import check_executions, materializations
from backfill_platform_tests.support.datasets import INGESTIONS, LEDGER, production, shadow_table_of
from backfill_platform_tests.support.lakehouse import lakehouse_session

pytestmark = pytest.mark.other_writers

DAYS = VIEWS_BACKFILL_DAYS
RANGE_END_EXCLUSIVE = "2026-10-05"
REASON = VIEWS_BACKFILL_TAGS["backfill_platform/reason"]
TICKET = VIEWS_BACKFILL_TAGS["backfill_platform/ticket"]
SHADOW = shadow_table_of("views_per_title")
PRODUCTION = production("views_per_title").table


def test_graphql_backfill_rederives_and_promotes_the_range(views_backfill: dict, dagster_dev, truth, spark):
    backfill_id = views_backfill["id"]
    assert views_backfill["status"] == "COMPLETED_SUCCESS", f"{views_backfill}\n{dagster_dev.log_tail()}"

    # The whole range ran as one successful run (BackfillPolicy.single_run()), tagged by the backfill.
    assert len(views_backfill["runs"]) == 1, views_backfill["runs"]
    run = views_backfill["runs"][0]
    assert run["status"] == "SUCCESS", run
    tags = {tag["key"]: tag["value"] for tag in run["tags"]}
    assert tags["dagster/backfill"] == backfill_id
    assert tags["backfill_platform/reason"] == REASON
    assert tags["backfill_platform/ticket"] == TICKET
    assert (tags["dagster/asset_partition_range_start"], tags["dagster/asset_partition_range_end"]) == (
        DAYS[0],
        DAYS[-1],
    )

    # `dagster dev`'s lakehouse, through a new session of its own (Iceberg catalog instance and JDBC
    # connections): the webserver's run committed there, so the assertions cannot read stale metadata.
    spark = lakehouse_session(spark, dagster_dev.data_dir)
    for identifier in (LEDGER, SHADOW, PRODUCTION):
        spark.sql(f"REFRESH TABLE {identifier}")

    # The production commit that promoted the range names the backfill, its reason and its ticket.
    promotions = spark.sql(
        f"SELECT snapshot_id, summary FROM {PRODUCTION}.snapshots "
        f"WHERE summary['dagster.backfill-id'] = '{backfill_id}'"
    ).collect()
    assert len(promotions) == 1, promotions
    promotion_snapshot, summary = promotions[0]["snapshot_id"], promotions[0]["summary"]
    assert summary[ACTION] == "promote"
    assert summary["dagster.run-id"] == run["runId"]
    assert summary["reason"] == REASON
    assert summary["ticket"] == TICKET
    assert (summary[RANGE_START], summary[RANGE_END]) == (DAYS[0], RANGE_END_EXCLUSIVE)

    # The ledger holds one checked, promoted row per day of the range, with the archive's counts.
    rows = (
        spark.table(LEDGER)
        .where(
            (F.col("dataset") == "views_per_title")
            & (F.col("version") == "v2")
            & (F.col("backfill_id") == backfill_id)
        )
        .collect()
    )
    assert sorted(row["partition_date"].isoformat() for row in rows) == DAYS, rows
    for row in rows:
        day = row["partition_date"].isoformat()
        assert row["run_id"] == run["runId"], day
        assert row["checks_passed"] is True, (day, row["failed_checks"])
        assert row["records"] == truth["partitions"][day]["records"], day
        assert row["reason"] == REASON, day
        assert row["promoted_snapshot_id"] == promotion_snapshot, day
        assert row["promotion_run_id"] == run["runId"], day

    # Production, as promoted, equals the shadow v2 snapshot it was promoted from, row for row.
    shadow_snapshot = int(summary["backfill_platform.shadow-snapshot-id"])
    production = read_at(spark, PRODUCTION, promotion_snapshot)
    shadow = read_at(spark, SHADOW, shadow_snapshot)
    in_days = F.col("event_date").isin(DAYS)
    production, shadow = production.where(in_days), shadow.where(in_days).select(*production.columns)
    assert production.count() > 0
    assert production.count() == shadow.count()
    assert production.exceptAll(shadow).count() == 0
    assert shadow.exceptAll(production).count() == 0


JOIN_SHADOW, JOIN_PRODUCTION = JOIN_BACKFILL_ASSETS[1], JOIN_BACKFILL_ASSETS[2]


def test_the_join_backfills_its_selected_days_only(views_backfill: dict, dagster_dev, spark):
    """The day after the range (2026-10-05: the lookback of its impressions reads 2026-10-04, and nothing
    ingested its own events) is not targeted: the backfill succeeds with every selected (check, day)
    SUCCEEDED, and nothing of that day is reported failed."""
    assert views_backfill["status"] == "COMPLETED_SUCCESS", f"{views_backfill}\n{dagster_dev.log_tail()}"
    (run,) = views_backfill["runs"]
    statuses = asset_statuses(views_backfill)
    for asset in JOIN_BACKFILL_ASSETS[1:]:
        status = statuses["/".join(asset)]
        assert (status["numPartitionsTargeted"], status["numPartitionsMaterialized"]) == (3, 3), status
        assert status["numPartitionsFailed"] == 0, status
    for check in CHECK_DESCRIPTIONS:
        for day in DAYS:
            executions = [
                e
                for e in check_executions(dagster_dev, JOIN_SHADOW, check, day)
                if e["runId"] == run["runId"]
            ]
            assert [e["status"] for e in executions] == ["SUCCEEDED"], (check, day, executions)
        after = check_executions(dagster_dev, JOIN_SHADOW, check, JOIN_DAY_AFTER)
        assert [e for e in after if e["status"] != "SUCCEEDED"] == [], (check, after)
    for asset in JOIN_BACKFILL_ASSETS[1:]:
        assert materializations(dagster_dev, asset, [JOIN_DAY_AFTER]) == [], asset
        assert sorted(m["partition"] for m in materializations(dagster_dev, asset, DAYS)) == DAYS, asset

    # Read back: the impressions of the day before were ingested by the run; the join's days promoted by it.
    spark = lakehouse_session(spark, dagster_dev.data_dir)
    for identifier in (INGESTIONS, LEDGER, production("attributed_plays").table):
        spark.sql(f"REFRESH TABLE {identifier}")
    ingested = {
        row["partition_date"].isoformat(): row
        for row in spark.table(INGESTIONS).where(F.col("stream") == "impressions").collect()
    }
    assert sorted(ingested) == [JOIN_DAY_BEFORE, *DAYS]
    assert {(r["run_id"], r["checks_passed"]) for r in ingested.values()} == {(run["runId"], True)}
    promoted = spark.table(LEDGER).where(
        (F.col("dataset") == "attributed_plays") & (F.col("promotion_run_id") == run["runId"])
    )
    assert sorted(r["partition_date"].isoformat() for r in promoted.collect()) == DAYS
    per_day = spark.table(production("attributed_plays").table).groupBy("play_date").count().collect()
    assert sorted(r["play_date"].isoformat() for r in per_day) == DAYS
    assert all(r["count"] > 0 for r in per_day)
