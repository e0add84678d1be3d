"""A daily dataset (`bucket: day`): no hour column, validated, promoted and verified per day.

`daily_plays` (plays and watch seconds per day and title) runs on the generated playback archive (the
session's events, or a copy of the archive where a run re-derives events) through real Dagster runs:
production must equal an independent pandas computation over the events, every check holds per day, and
a shadow damaged on one day fails its blocking check for exactly that day.
"""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

import pandas as pd
import pytest
import yaml
from dagster import materialize
from pyspark.sql import functions as F

from backfill_platform.lakehouse.tables import in_range, table_exists
from backfill_platform.pipeline.events.assets import build_events_asset
from backfill_platform.pipeline.names import events_table, production_table, shadow_table
from backfill_platform.pipeline.promotion.assets import build_production_asset
from backfill_platform.pipeline.promotion.gate import PromotionRefused
from backfill_platform.pipeline.promotion.promote import promote
from backfill_platform.pipeline.shadow.assets import build_shadow_asset
from backfill_platform.pipeline.shadow.checks import CHECKSUMS, ROW_COUNTS
from backfill_platform.pipeline.tables.dataset_tables import read_range
from backfill_platform.pipeline.validation.bucket_verdicts import checksum_verdicts, row_count_verdicts
from backfill_platform.pipeline.validation.buckets import actual_figures, events_figures
from backfill_platform.pipeline.validation.divergence import compare
from backfill_platform.pipeline.validation.promotion_verdicts import compare_buckets
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.yaml_guard import SpecError
from backfill_platform_tests.daily_transforms import BROKEN_DAY
from backfill_platform_tests.support.datasets import dataset as hourly_dataset
from backfill_platform_tests.support.projects import load_project, write_project
from backfill_platform_tests.support.session import START, range_tags
from backfill_platform_tests.support.specs import mutated
from backfill_platform_tests.support.streams import stream_copy

D1, D3 = START, START + timedelta(days=2)
END = D3 + timedelta(days=1)
DAYS = [(START + timedelta(days=i)).isoformat() for i in range(3)]
assert DAYS[1] == BROKEN_DAY
TRANSFORMS = "backfill_platform_tests.daily_transforms"
PROMOTION_VERIFIED = "promotion_verified"

# The docs' example ("Writing a transform"), as a spec folder holds it.
DAILY_PLAYS_YAML = f"""
kind: dataset
name: daily_plays
description: Plays and watch time per title and event-time day.
source_stream: playback
partition_column: event_date
bucket: day                      # validated per day: no hour column
key_columns: [event_date, title_id]
columns:
  event_date: date
  title_id: string
  plays: long
  watch_seconds: long
versions:
  v1:
    transform: {TRANSFORMS}:daily_plays
active_version: v1
expected_rows:                   # one row per title with a start or a stop that day
  filter: "event_type IN ('start', 'stop')"
  expression: "count(DISTINCT title_id)"
reconciliation:
  - column: plays
    filter: "event_type = 'start'"
    expression: "count(1)"
  - column: watch_seconds
    filter: "event_type = 'stop'"
    expression: "sum(position_sec)"
"""


def daily(
    name: str,
    active: str = "v1",
    extra_versions: dict[str, str] | None = None,
    source_stream: str = "playback",
) -> DatasetSpec:
    raw = yaml.safe_load(DAILY_PLAYS_YAML)
    raw["name"], raw["active_version"], raw["source_stream"] = name, active, source_stream
    for version, function in (extra_versions or {}).items():
        raw["versions"][version] = {"transform": f"{TRANSFORMS}:{function}"}
    return DatasetSpec.model_validate(raw)


def verdicts(result, check: str) -> dict[str, object]:
    """The per-day evaluations of one check in a run."""
    return {e.partition: e for e in result.get_asset_check_evaluations() if e.check_name == check}


def failed_blocking(result) -> set[tuple[str, str]]:
    return {
        (e.check_name, e.partition)
        for e in result.get_asset_check_evaluations()
        if not e.passed and e.check_name in (ROW_COUNTS, CHECKSUMS)
    }


def pandas_daily_plays(spark, stream) -> dict[tuple[str, str], tuple[int, int]]:
    """The dataset computed in plain pandas from the stream's events table, without Spark's aggregation."""
    events = (
        spark.table(events_table(spark, stream))
        .where(in_range("event_time", D1, END))
        .select("event_time", "title_id", "event_type", "position_sec")
        .toPandas()
    )
    events = events[events["event_type"].isin(["start", "stop"])].copy()
    events["day"] = pd.to_datetime(events["event_time"]).dt.date.astype(str)
    events["play"] = (events["event_type"] == "start").astype(int)
    events["watch"] = events["position_sec"].where(events["event_type"] == "stop", 0).fillna(0).astype(int)
    grouped = events.groupby(["day", "title_id"])[["play", "watch"]].sum()
    return {key: (int(row.play), int(row.watch)) for key, row in grouped.iterrows()}


def production_rows(spark, spec: DatasetSpec) -> dict[tuple[str, str], tuple[int, int]]:
    rows = read_range(spark, production_table(spark, spec), spec, D1, END).collect()
    return {(r["event_date"].isoformat(), r["title_id"]): (r["plays"], r["watch_seconds"]) for r in rows}


# --- the spec ---------------------------------------------------------------------------------------


def load_daily(folder: Path, raw: dict) -> DatasetSpec:
    """The dataset `raw` as loaded from a project beside the demo's playback stream (a refusal is its
    `SpecError`)."""
    return load_project(write_project(folder, [mutated(), raw])).datasets[raw["name"]]


def test_daily_spec_has_no_hour_column_and_refuses_one(tmp_path: Path):
    raw = yaml.safe_load(DAILY_PLAYS_YAML)
    spec = load_daily(tmp_path, raw)
    assert spec.bucket == "day" and spec.bucket_column is None
    assert spec.bucket_columns == ["event_date"]

    with_hour = {**raw, "bucket_column": "event_date"}
    with pytest.raises(SpecError) as error:
        load_daily(tmp_path, with_hour)
    message = str(error.value)
    assert "field 'bucket_column'" in message and "must be absent with bucket: day" in message

    hourly_without_column = {**raw, "bucket": "hour"}
    with pytest.raises(SpecError, match=r"field 'bucket_column': .*required with bucket: hour"):
        load_daily(tmp_path, hourly_without_column)
    with pytest.raises(SpecError, match=r"field 'bucket': .*'hour', 'day' or 'partition'"):
        load_daily(tmp_path, {**raw, "bucket": "week"})


def test_hour_datasets_are_unchanged():
    views = hourly_dataset("views_unchanged")
    assert views.bucket == "hour" and views.bucket_column == "event_hour"
    assert views.bucket_columns == ["event_date", "event_hour"]
    with pytest.raises(ValueError, match="bucket_column 'title_id' must be of type int"):
        hourly_dataset("views_bad_hour", bucket_column="title_id")
    with pytest.raises(ValueError, match="key_columns must include 'event_hour'"):
        hourly_dataset("views_no_hour_key", key_columns=["event_date", "title_id"])


# --- real runs --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def promoted(truth, data_dir, spark_resource, playback):
    """events → shadow v1 → production of daily_plays over three days, in one Dagster run, on a copy of
    the archive (a stream of its own: the session's events are not rewritten)."""
    stream = stream_copy(playback, data_dir, "playback_daily")
    spec = daily("daily_plays", source_stream=stream.name)
    assets = [
        build_events_asset(stream),
        build_shadow_asset(spec, [stream], "v1"),
        build_production_asset(spec, [stream]),
    ]
    result = materialize(
        assets, resources={"spark": spark_resource}, tags=range_tags(D1, D3), raise_on_error=False
    )
    return spec, result, stream


def test_daily_dataset_is_promoted_equal_to_an_independent_computation(promoted, spark, truth):
    spec, result, stream = promoted
    assert result.success
    for check in (ROW_COUNTS, CHECKSUMS, PROMOTION_VERIFIED):
        by_day = verdicts(result, check)
        assert sorted(by_day) == DAYS and all(e.passed for e in by_day.values()), check
    for evaluation in verdicts(result, ROW_COUNTS).values():
        assert evaluation.metadata["buckets_checked"].value == 1  # the day is the one bucket
        assert evaluation.metadata["buckets_failed"].value == 0
    assert all(
        e.metadata["buckets_differing"].value == 0 for e in verdicts(result, PROMOTION_VERIFIED).values()
    )

    production = production_rows(spark, spec)
    assert production == pandas_daily_plays(spark, stream)
    for day in DAYS:  # plays are the starts the generator wrote, day by day
        plays = sum(p for (d, _), (p, _) in production.items() if d == day)
        assert plays == truth["partitions"][day]["starts"] > 0, day
    sums = verdicts(result, CHECKSUMS)
    for day in DAYS:
        assert sums[day].metadata["sum_plays"].value == truth["partitions"][day]["starts"]


@pytest.mark.parametrize(
    ("function", "failing"),
    [("dropping_rows_on_one_day", ROW_COUNTS), ("one_play_too_many_on_one_day", CHECKSUMS)],
)
def test_a_shadow_wrong_on_one_day_fails_that_day_only(
    events_materialized, spark, spark_resource, playback, function, failing
):
    spec = daily(f"daily_broken_{failing}", active="broken", extra_versions={"broken": function})
    chain = [build_shadow_asset(spec, [playback], "broken"), build_production_asset(spec, [playback])]
    result = materialize(
        chain, resources={"spark": spark_resource}, tags=range_tags(D1, D3), raise_on_error=False
    )
    assert not result.success
    assert (failing, BROKEN_DAY) in failed_blocking(result)
    assert {day for _, day in failed_blocking(result)} == {BROKEN_DAY}
    failed = verdicts(result, failing)[BROKEN_DAY]
    assert failed.metadata["buckets_failed"].value == 1
    assert [record.data["bucket"] for record in failed.metadata["failed_buckets"].records] == ["whole day"]
    if failing == CHECKSUMS:  # the rows are all there; only the sum is wrong
        # The problem says which figure is the shadow's and which the events imply.
        problem = failed.metadata["failed_buckets"].records[0].data["difference"]
        assert ": shadow " in problem and ", events imply " in problem, problem
        row_counts = verdicts(result, ROW_COUNTS)
        assert row_counts and all(e.passed for e in row_counts.values())
    assert not table_exists(spark, production_table(spark, spec))  # nothing was promoted


def test_rows_changed_behind_the_platforms_back_fail_that_day(
    events_materialized, spark, spark_resource, playback
):
    # A dataset of the test's own, validated and promoted, then its shadow changed behind the platform's back.
    spec = daily("daily_plays_tampered")
    chain = [build_shadow_asset(spec, [playback], "v1"), build_production_asset(spec, [playback])]
    result = materialize(
        chain, resources={"spark": spark_resource}, tags=range_tags(D1, D3), raise_on_error=False
    )
    assert result.success
    target = shadow_table(spark, spec, "v1")
    spark.sql(f"UPDATE {target} SET plays = plays + 1 WHERE event_date = DATE '{BROKEN_DAY}'")
    with pytest.raises(PromotionRefused, match="changed after its validation"):
        promote(spark, spec, [playback], D1, END)

    # The same checks, run again on the tampered shadow, fail exactly that day.
    events = spark.table(events_table(spark, playback)).where(in_range("event_time", D1, END))
    shadow = read_range(spark, target, spec, D1, END)
    expected, actual = events_figures(events, spec, DAYS)[0], actual_figures(shadow, spec)
    assert set(actual) == {(day, None) for day in DAYS}
    row_counts = row_count_verdicts(ROW_COUNTS, DAYS, expected, actual)
    assert row_counts and all(v.passed for v in row_counts)
    assert [
        v.partition for v in checksum_verdicts(CHECKSUMS, spec, DAYS, expected, actual) if not v.passed
    ] == [BROKEN_DAY]

    # Production verification and divergence point at the same day, by key.
    production = read_range(spark, production_table(spark, spec), spec, D1, END)
    assert set(compare_buckets(actual, actual_figures(production, spec))) == {(BROKEN_DAY, None)}
    divergence = compare(shadow, production, spec, DAYS)
    titles = shadow.where(F.col("event_date") == F.lit(date.fromisoformat(BROKEN_DAY))).count()
    assert divergence.partitions[BROKEN_DAY].changed == titles > 0
    assert all(divergence.partitions[day].diverging == 0 for day in DAYS if day != BROKEN_DAY)
