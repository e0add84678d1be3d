"""Hourly grain (#37): a stream declared `partition_grain: hour` and a dataset over it, partitioned by hour.

Seed 001 at hourly grain: a deploy wrong between T1 and T2 (18:10-19:40) passed the checks (the column it
broke is not reconciled) and reached production; re-deriving costs exactly the two hours it touched, in one
commit that replaces their files and no other hour's. The events equal, hour by hour, the archive by the
generator's accounting rules; a dataset partitioned by a date cannot read an hourly stream."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from dagster import HourlyPartitionsDefinition, materialize
from pyspark.sql import functions as F

from backfill_platform.devtools.generator.truth import HOUR_MS, classify_line, read_archive
from backfill_platform.lakehouse.snapshots import current_snapshot_id
from backfill_platform.pipeline.events.assets import build_events_asset
from backfill_platform.pipeline.ledger.ledger import ledger
from backfill_platform.pipeline.names import (
    events_key,
    events_table,
    production_key,
    production_table,
    quarantine_table,
    shadow_key,
    shadow_table,
)
from backfill_platform.pipeline.partitions import HOUR_KEY
from backfill_platform.pipeline.promotion.assets import build_production_asset
from backfill_platform.pipeline.promotion.checks import PROMOTION_VERIFIED
from backfill_platform.pipeline.promotion.cutover import drop_shadow, history_divergence
from backfill_platform.pipeline.shadow.assets import build_shadow_asset
from backfill_platform.pipeline.shadow.checks import CHECKSUMS, ROW_COUNTS
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.durations import HOUR
from backfill_platform.specs.yaml_guard import SpecError
from backfill_platform_tests.hourly_transforms import T1, T2
from backfill_platform_tests.support.datasets import INGESTIONS, hourly_dataset_data, promotion_chain
from backfill_platform_tests.support.projects import defs_folder, load_project, write_project
from backfill_platform_tests.support.session import D2
from backfill_platform_tests.support.specs import mutated
from backfill_platform_tests.support.streams import stream_copy

STREAM, DATASET = "playback_hourly", "views_hourly"
EPOCH = datetime(1970, 1, 1)
HOURS = [datetime(D2.year, D2.month, D2.day, h) for h in range(16, 22)]  # a busy evening, 16:00-21:59
assert (HOURS[2] + timedelta(minutes=10), HOURS[3] + timedelta(minutes=40)) == (T1, T2)  # 18:10-19:40
HOUR_KEYS = [h.strftime(HOUR_KEY) for h in HOURS]
BAD_KEYS = HOUR_KEYS[2:4]  # the hours [T1, T2) touches: 18:00 and 19:00
KEPT_KEYS = [k for k in HOUR_KEYS if k not in BAD_KEYS]


def hourly_dataset(active: str) -> DatasetSpec:
    """The hourly dataset, `active` the version a run derives and promotes (v1 right, v2 the bad deploy)."""
    return DatasetSpec.model_validate(hourly_dataset_data(active, STREAM, DATASET))


def run_hours(spark_resource, assets: list, first: datetime, last: datetime):
    """One in-process run of `assets` over the hours holding `first`..`last`; failures are returned."""
    start, end = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"
    tags = {start: hour_key(first), end: hour_key(last)}
    return materialize(assets, resources={"spark": spark_resource}, tags=tags, raise_on_error=False)


def materialized(result, key) -> set[str]:
    return {e.partition for e in result.get_asset_materialization_events() if e.asset_key == key}


def verdicts(result, check: str) -> dict[str, bool]:
    return {e.partition: e.passed for e in result.get_asset_check_evaluations() if e.check_name == check}


def hour_key(instant: datetime) -> str:
    return instant.replace(minute=0, second=0, microsecond=0).strftime(HOUR_KEY)


def views_from_events(spark, stream) -> dict[str, list[tuple]]:
    """Per hour key, its rows (title, views, unique viewers), in plain Python over the events table."""
    starts = spark.table(events_table(spark, stream)).where(F.col("event_type") == "start")
    users = defaultdict(list)
    for r in starts.select("event_time", "title_id", "user_id").collect():
        users[(hour_key(r.event_time), r.title_id)].append(r.user_id)
    rows = defaultdict(list)
    for (hour, title), ids in users.items():
        rows[hour].append((title, len(ids), len(set(ids))))
    return {hour: sorted(found) for hour, found in rows.items()}


def production_by_hour(spark, table: str) -> dict[str, list[tuple]]:
    """Production's rows per hour key; an `event_hour` off the hour gives a key of its own (never equal)."""
    rows = defaultdict(list)
    for r in spark.table(table).collect():
        rows[r.event_hour.strftime(HOUR_KEY)].append((r.title_id, r.views, r.unique_viewers))
    return {hour: sorted(found) for hour, found in rows.items()}


def files_by_hour(spark, table: str) -> dict[str, set[str]]:
    """The current data files of each hour partition (an `hours(...)` value counts hours since 1970)."""
    files = defaultdict(set)
    for r in spark.sql(f"SELECT partition, file_path FROM {table}.files WHERE content = 0").collect():
        files[(EPOCH + r.partition[0] * HOUR).strftime(HOUR_KEY)].add(r.file_path)
    return dict(files)


def snapshots(spark, table: str) -> dict[int, int | None]:
    return {r.snapshot_id: r.parent_id for r in spark.sql(f"SELECT * FROM {table}.snapshots").collect()}


def partitioning(spark, table: str) -> list[str]:
    """The table's partition transforms as Spark describes them (`Part 0: hours(event_time)`)."""
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {table}").collect()
    return [r.data_type for r in rows if r.col_name.startswith("Part ")]


def archive_by_hour(archive: Path, truth: dict) -> dict[str, tuple[int, int]]:
    """(events, starts) per event-time hour, from the archive's lines by the generator's accounting
    rules (`devtools/generator/truth.py`): admissible lines, one event per id."""
    lateness, skew = round(truth["lateness_hours"] * HOUR_MS), round(truth["clock_skew_minutes"] * 60_000)
    kept: dict[str, dict[str, str]] = defaultdict(dict)
    for line in read_archive(archive):
        reason, record, t = classify_line(line.text)
        if reason is None and line.hb_ms - lateness <= t < line.hb_ms + HOUR_MS + skew:
            hour = (EPOCH + (t // HOUR_MS) * HOUR).strftime(HOUR_KEY)
            kept[hour].setdefault(record["event_id"], record.get("event_type"))
    return {hour: (len(ids), list(ids.values()).count("start")) for hour, ids in kept.items()}


@pytest.fixture(scope="module")
def hourly(truth, data_dir, spark_resource, playback):
    """events → shadow v2 → production over HOURS in one run, on a copy of the archive declared hourly
    (its own tables): production as the bad deploy left it."""
    stream = stream_copy(playback, data_dir, STREAM, partition_grain="hour")
    chain = promotion_chain(hourly_dataset("v2"), stream)
    return stream, run_hours(spark_resource, [build_events_asset(stream), *chain], HOURS[0], HOURS[-1])


@pytest.fixture(scope="module")
def fixed(hourly, spark, spark_resource) -> dict:
    """The fix: v1 re-derived and promoted for the hours [T1, T2) touches (T2 is not on the hour), in one
    run; production as the bad deploy left it, captured before."""
    stream, _ = hourly
    spec = hourly_dataset("v1")
    table = production_table(spark, spec)
    before = {
        "production": production_by_hour(spark, table),
        "files": files_by_hour(spark, table),
        "snapshots": snapshots(spark, table),
        "snapshot": current_snapshot_id(spark, table),
    }
    result = run_hours(spark_resource, promotion_chain(spec, stream), T1, T2)
    return {"spec": spec, "table": table, "before": before, "result": result}


def test_a_bad_transform_between_two_times_is_re_derived_and_promoted_for_exactly_its_hours(
    hourly, fixed, spark, truth
):
    stream, deployed = hourly
    assert deployed.success  # v2 passed every blocking check: its bug is in a column nothing reconciles
    for check in (ROW_COUNTS, CHECKSUMS, PROMOTION_VERIFIED):
        assert verdicts(deployed, check) == dict.fromkeys(HOUR_KEYS, True), check
    spec, table = fixed["spec"], fixed["table"]
    assert partitioning(spark, table) == ["hours(event_hour)"]
    assert partitioning(spark, shadow_table(spark, spec, "v2")) == ["hours(event_hour)"]
    expected = views_from_events(spark, stream)
    assert sorted(expected) == HOUR_KEYS
    for hour in HOURS:  # the independent computation agrees with the generator's truth
        starts = truth["partitions"][D2.isoformat()]["starts_by_hour"][str(hour.hour)]
        assert sum(views for _, views, _ in expected[hour.strftime(HOUR_KEY)]) == starts > 0
    before = fixed["before"]["production"]
    assert [k for k in HOUR_KEYS if before[k] != expected[k]] == BAD_KEYS  # wrong in exactly those hours
    files_before, snapshots_before = fixed["before"]["files"], fixed["before"]["snapshots"]
    deployed_snapshot = fixed["before"]["snapshot"]
    assert sorted(files_before) == HOUR_KEYS  # one partition per hour

    result = fixed["result"]
    assert result.success
    assert materialized(result, shadow_key(spec, "v1")) == set(BAD_KEYS)
    assert materialized(result, production_key(spec)) == set(BAD_KEYS)
    for check in (ROW_COUNTS, CHECKSUMS, PROMOTION_VERIFIED):
        assert verdicts(result, check) == dict.fromkeys(BAD_KEYS, True), check

    after = production_by_hour(spark, table)
    assert after == expected  # every hour now equals the independent computation
    assert {k: after[k] for k in KEPT_KEYS} == {k: before[k] for k in KEPT_KEYS}
    # One commit on top of the bad deploy's; the other hours keep their very files.
    (promoted,) = set(snapshots(spark, table)) - set(snapshots_before)
    assert current_snapshot_id(spark, table) == promoted
    assert snapshots(spark, table)[promoted] == deployed_snapshot
    files_after = files_by_hour(spark, table)
    assert {k: files_after[k] for k in KEPT_KEYS} == {k: files_before[k] for k in KEPT_KEYS}
    assert all(files_after[k] and files_after[k].isdisjoint(files_before[k]) for k in BAD_KEYS)

    # The ledger speaks of the hours by their Dagster keys; `partition` is their UTC day.
    rows = ledger(spark, DATASET).collect()
    keys = {v: sorted({r.partition_key for r in rows if r.version == v}) for v in ("v1", "v2")}
    assert keys == {"v1": BAD_KEYS, "v2": HOUR_KEYS}
    assert {r.partition_date for r in rows} == {D2}
    assert {r.promoted_snapshot_id for r in rows if r.version == "v1"} == {promoted}


def test_the_cutover_review_compares_versions_hour_by_hour(fixed, spark):
    """What a reviewer reads before switching versions (`divergence`): per hour, against production."""
    assert fixed["result"].success
    spec = fixed["spec"]
    deployed = history_divergence(spark, spec, "v2")  # the bad deploy's shadow, against fixed production
    assert sorted(deployed.partitions) == HOUR_KEYS
    assert {k for k, p in deployed.partitions.items() if p.diverging} == set(BAD_KEYS)
    assert all(deployed.partitions[k].changed == deployed.partitions[k].diverging > 0 for k in BAD_KEYS)
    candidate = history_divergence(spark, spec, "v1")  # derived for the two hours only
    assert all(candidate.partitions[k].diverging == 0 for k in BAD_KEYS)
    assert all(candidate.partitions[k].only_in_production > 0 for k in KEPT_KEYS)
    with pytest.raises(ValueError, match="active version"):
        drop_shadow(spark, spec, "v1")


def test_an_hourly_stream_holds_each_hour_of_the_archive_in_hour_partitions(
    hourly, spark, truth, playback_archive
):
    stream, result = hourly
    assert result.success
    events = build_events_asset(stream)
    hours = events.partitions_def
    assert isinstance(hours, HourlyPartitionsDefinition) and hours.timezone == "UTC"
    assert hours.get_first_partition_key() == f"{stream.first_partition.isoformat()}-00:00"
    spec = hourly_dataset("v1")
    assert build_shadow_asset(spec, [stream], "v1").partitions_def == hours
    assert build_production_asset(spec, [stream]).partitions_def == hours
    assert materialized(result, events_key(stream)) == set(HOUR_KEYS)
    assert partitioning(spark, events_table(spark, stream)) == ["hours(event_time)"]
    assert partitioning(spark, quarantine_table(spark, stream)) == ["hours(attributed_time)"]

    archive = archive_by_hour(playback_archive, truth)
    for hour in HOURS:  # the rules' starts are the generator's truth
        starts = truth["partitions"][D2.isoformat()]["starts_by_hour"][str(hour.hour)]
        assert archive[hour.strftime(HOUR_KEY)][1] == starts > 0
    hour = F.date_format(F.date_trunc("hour", "event_time"), "yyyy-MM-dd-HH:mm").alias("hour")
    starts = F.count(F.when(F.col("event_type") == "start", 1)).alias("starts")
    counts = spark.table(events_table(spark, stream)).groupBy(hour).agg(F.count("*").alias("events"), starts)
    actual = {r.hour: (r.events, r.starts) for r in counts.collect()}
    assert actual == {k: archive[k] for k in HOUR_KEYS}  # exactly the ingested hours, each whole

    ingested = spark.table(INGESTIONS).where(F.col("stream") == STREAM).collect()
    assert sorted({r.partition_key for r in ingested}) == HOUR_KEYS
    assert {r.partition_date for r in ingested} == {D2}
    assert {r.partition_key: r.written for r in ingested} == {k: archive[k][0] for k in HOUR_KEYS}


def test_a_dataset_is_of_its_streams_grain_or_coarser(tmp_path: Path):
    daily = "views_by_date"  # days over hours: rolled up
    specs = [
        mutated(partition_grain="hour"),
        hourly_dataset_data("v1", "playback", DATASET),
        hourly_dataset_data("v1", "playback", daily, column="event_date", kind="date"),
    ]
    loaded = load_project(write_project(tmp_path, specs))
    assert loaded.streams["playback"].partition_grain == "hour"
    assert (loaded.datasets[DATASET].grain.unit, loaded.datasets[daily].grain.unit) == ("hour", "day")

    # A daily stream: its hours cannot be judged apart.
    project = write_project(tmp_path, [mutated(), hourly_dataset_data("v1", "playback", DATASET)])
    with pytest.raises(SpecError) as error:
        load_project(project)
    message = str(error.value)
    path = defs_folder(project.root) / DATASET / "defs.yaml"
    assert message.startswith(f"{path}: ") and "event_hour" in message, message
    assert "stream 'playback' is partitioned by day" in message, message
