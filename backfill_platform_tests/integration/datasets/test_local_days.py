"""Hourly events rolled up into daily tables: UTC days, and the days of New York and Berlin.

Small archives generated around the 2026 DST transitions (spring: New York 03-08, Berlin 03-29; autumn:
Berlin 10-25, New York 11-01) are declared as hourly streams (`partition_grain: hour`). Their hours are
ingested in one run, then daily datasets over them (`partition_timezone`) are validated and promoted day by
day in another. Every local day equals an independent computation over the events table (pandas,
`tz_convert`), its 23 or 25 hours included, and reads exactly the UTC hours its zone's rules give it.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta

import pandas as pd
import pytest
from dagster import materialize
from rich.console import Console

from backfill_platform.devtools.generator.playback import GeneratorConfig, generate_playback_archive
from backfill_platform.lakehouse.tables import table_exists
from backfill_platform.operations.ledger_report import promotion_report
from backfill_platform.operations.report import build_report, report_markdown
from backfill_platform.pipeline.events.assets import build_events_asset
from backfill_platform.pipeline.names import (
    events_key,
    events_table,
    production_key,
    production_table,
    shadow_table,
)
from backfill_platform.pipeline.partitions import dataset_partitions
from backfill_platform.pipeline.promotion.checks import PROMOTION_VERIFIED
from backfill_platform.pipeline.shadow.checks import CHECKSUMS, EVENTS_VALIDATED, ROW_COUNTS
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.grain import HOURLY, Grain
from backfill_platform.specs.stream import StreamSpec
from backfill_platform_tests.support.cli import table_row
from backfill_platform_tests.support.datasets import LEDGER, local_daily_data, promotion_chain

RANGE_START, RANGE_END = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"
NEW_YORK, BERLIN = "America/New_York", "Europe/Berlin"
# (archive's first day, days generated, the zone, its local days validated, (day, hours) of its DST day)
CASES = {
    "new-york-spring": (date(2026, 3, 7), 3, NEW_YORK, ["2026-03-07", "2026-03-08"], ("2026-03-08", 23)),
    # Berlin's first local day starts at 23:00 UTC the day before the archive: its days start the next one.
    "berlin-spring": (date(2026, 3, 28), 3, BERLIN, ["2026-03-29", "2026-03-30"], ("2026-03-29", 23)),
    "autumn-both": (date(2026, 10, 24), 10, NEW_YORK, ["2026-10-31", "2026-11-01"], ("2026-11-01", 25)),
    "autumn-berlin": (date(2026, 10, 24), 10, BERLIN, ["2026-10-25", "2026-10-26"], ("2026-10-25", 25)),
    "autumn-utc": (date(2026, 10, 24), 10, "UTC", ["2026-10-31", "2026-11-01"], ("2026-11-01", 24)),
}
_generated: set[str] = set()


def hourly_stream(playback: StreamSpec, data_dir, first: date, days: int) -> StreamSpec:
    """A small archive from `first` for `days` days (generated once), declared as an hourly stream."""
    name = f"playback_hours_{first:%m%d}"
    if name not in _generated:
        config = GeneratorConfig(start=first, days=days, events_per_day=600, seed=5, file_every_hour=True)
        generate_playback_archive(data_dir / "archive" / name, config)
        _generated.add(name)
    archive = playback.archive.model_copy(update={"location": f"archive/{name}"})
    # About 25 events an hour, fewer at night: one malformed line is 4 %, and a night hour may have none.
    changes = {"first_partition": first, "partition_grain": "hour", "max_quarantined_per_day": 5,
               "allow_empty_partitions": True}  # fmt: skip
    return playback.model_copy(update={"name": name, "archive": archive, **changes})


def ingest_hours(spark_resource, stream: StreamSpec, start: datetime, end: datetime) -> None:
    """The events of the UTC hours [start, end), in one run; every hour passes its checks."""
    keys = HOURLY.keys_between(start, end)
    tags = {RANGE_START: keys[0], RANGE_END: keys[-1]}
    result = materialize([build_events_asset(stream)], resources={"spark": spark_resource}, tags=tags)
    assert {e.partition for e in result.get_asset_materialization_events()} == set(keys)


def expected_per_day(spark, stream: StreamSpec, zone: str, days: list[str]) -> dict[tuple, tuple]:
    """(day, title) -> (plays, watch seconds) from the events table, in pandas: the local day is the UTC
    event time converted with `tz_convert` (not Spark's functions, which the transform uses)."""
    events = spark.table(events_table(spark, stream)).select("event_time", "event_type", "title_id",
                                                           "position_sec").toPandas()  # fmt: skip
    local = pd.to_datetime(events["event_time"]).dt.tz_localize("UTC").dt.tz_convert(zone)
    events["day"] = local.dt.date.astype(str)
    events = events[events["day"].isin(days) & events["event_type"].isin(["start", "stop"])]
    expected = {}
    for (day, title), rows in events.groupby(["day", "title_id"]):
        starts = int((rows["event_type"] == "start").sum())
        watched = int(rows.loc[rows["event_type"] == "stop", "position_sec"].fillna(0).sum())
        expected[(day, title)] = (starts, watched)
    return expected


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_daily_dataset_of_a_zone_equals_its_local_days_of_hourly_events(
    case, playback, data_dir, spark, spark_resource
):
    first, days, zone, local_days, (dst_day, hours) = case
    stream = hourly_stream(playback, data_dir, first, days)
    name = f"plays_{zone.split('/')[-1].lower()}_{first:%m%d}"
    spec = DatasetSpec.model_validate(local_daily_data(name, stream.name, zone))
    grain = Grain("day", zone)
    assert spec.grain == grain and dataset_partitions(spec, stream).timezone == zone
    start, end = grain.bounds(dst_day)
    assert end - start == timedelta(hours=hours)  # the zone's rules, not 24 hours

    chain = promotion_chain(spec, stream)
    # The shadow depends on exactly the UTC hours its local day overlaps.
    hours_read = chain[0].get_partition_mapping(events_key(stream))
    upstream = hours_read.get_upstream_mapped_partitions_result_for_partitions(
        dataset_partitions(spec, stream).subset_with_partition_keys([dst_day]),
        dataset_partitions(spec, stream),
        build_events_asset(stream).partitions_def,
    ).partitions_subset.get_partition_keys()
    assert sorted(upstream) == HOURLY.keys_between(start, end)

    ingest_hours(spark_resource, stream, grain.start(local_days[0]), grain.bounds(local_days[-1])[1])
    tags = {RANGE_START: local_days[0], RANGE_END: local_days[-1]}
    result = materialize(chain, resources={"spark": spark_resource}, tags=tags, raise_on_error=False)
    assert result.success
    verdicts = {(e.check_name, e.partition): e.passed for e in result.get_asset_check_evaluations()}
    for check in (EVENTS_VALIDATED, ROW_COUNTS, CHECKSUMS, PROMOTION_VERIFIED):
        assert {verdicts[(check, day)] for day in local_days} == {True}, check
    promoted = {
        e.partition for e in result.get_asset_materialization_events() if e.asset_key == production_key(spec)
    }
    assert promoted == set(local_days)

    rows = spark.table(production_table(spark, spec)).collect()
    actual = {(r.event_date.isoformat(), r.title_id): (r.plays, r.watch_seconds) for r in rows}
    assert actual == expected_per_day(spark, stream, zone, local_days)
    assert {day for day, _ in actual} == set(local_days)
    ledger = spark.table(LEDGER).where(f"dataset = '{name}'").collect()
    assert sorted({r.partition_key for r in ledger}) == local_days
    assert {r.partition_date.isoformat() for r in ledger} == set(local_days)  # the local day, not a UTC one
    # Each day records the UTC hours it read (issue 61), and `ledger` and `report` show them.
    read = {r.partition_key: r.input_partitions for r in ledger}
    assert read[dst_day] == f"{stream.name}={hours}"
    assert set(read.values()) <= {f"{stream.name}={n}" for n in (23, 24, 25)}
    console = Console(record=True, width=300)
    console.print(promotion_report(spark, name, "v1"))
    assert table_row(console.export_text(), dst_day)[-1] == f"{stream.name}={hours}"
    markdown = report_markdown(build_report(result.run_id, {result.run_id}))
    cells = next(line.split("|") for line in markdown.splitlines() if line.startswith(f"| {dst_day} "))
    assert "input partitions |" in markdown and cells[-2].strip() == f"{stream.name}={hours}"


def test_a_run_of_hours_that_selects_a_daily_asset_is_refused(playback, data_dir, spark, spark_resource):
    """A run of New York days given hour tags (as a GraphQL `launchRun` selecting hours and days can be):
    Dagster would read the hour keys' `-04:00` as a UTC offset and derive New York days the run's hours do
    not hold. The platform refuses it before reading anything; nothing is written."""
    first, days, zone, local_days, _ = CASES["autumn-both"]
    stream = hourly_stream(playback, data_dir, first, days)
    spec = DatasetSpec.model_validate(local_daily_data("plays_new_york_mixed_run", stream.name, zone))
    start = Grain("day", zone).start(local_days[0])
    keys = HOURLY.keys_between(start, start + timedelta(hours=72))
    tags = {RANGE_START: keys[0], RANGE_END: keys[-1]}
    result = materialize(
        promotion_chain(spec, stream),
        resources={"spark": spark_resource},
        tags=tags,
        raise_on_error=False,
    )
    assert not result.success
    for asset in promotion_chain(spec, stream):  # what the UI says of it, where its users look
        description = asset.descriptions_by_key[asset.key]
        assert f"the days of {zone}" in description and "every source partition" in description
    failures = [e for e in result.all_events if e.is_step_failure]
    message = " ".join(e.event_specific_data.error.message for e in failures)
    assert f"this run's partitions {keys[0]}..{keys[-1]} are not days of this asset" in message, message
    assert "runs of their own" in message
    assert not result.get_asset_materialization_events()
    assert not table_exists(spark, production_table(spark, spec))
    assert not table_exists(spark, shadow_table(spark, spec, "v1"))


def test_plan_of_a_new_york_dataset_lists_its_days_with_the_hours_each_spans(playback, data_dir):
    """`plan --dataset` of local days over an hourly stream (issue 61): the dataset's days, the one summer
    time ends with its 25 UTC hours, each reading the files of all its hours once (no Spark: the archive's
    files and the ledger)."""
    from backfill_platform.operations.plan import build_plan, plan_table

    first, days, zone, local_days, _ = CASES["autumn-both"]
    stream = hourly_stream(playback, data_dir, first, days)
    spec = DatasetSpec.model_validate(local_daily_data(f"plays_plan_{first:%m%d}", stream.name, zone))
    start, end = spec.grain.start(local_days[0]), spec.grain.bounds(local_days[-1])[1]
    plan = build_plan(stream, [spec], start, end, days_of=spec.grain)
    assert plan.noun == "day"
    assert [(p.key, p.spans) for p in plan.partitions] == [("2026-10-31", 24), ("2026-11-01", 25)]
    by_hour = build_plan(stream, [spec], start, end).partitions
    for day in plan.partitions:
        low, high = spec.grain.bounds(day.key)
        hours = [h for h in by_hour if low <= HOURLY.start(h.key) < high]
        assert len(hours) == day.spans
        files = {f.name for h in hours for f in h.files}
        assert {f.name for f in day.files} == files and day.lines < sum(h.lines for h in hours)
        assert day.window == (hours[0].window[0], hours[-1].window[1])
    console = Console(record=True, width=300)
    console.print(plan_table(plan))
    output = console.export_text()
    print(output)  # shown when the test fails
    cells = table_row(output, "2026-11-01")
    assert cells[1] == "25" and cells[-1] == "-"  # its UTC hours; nothing in production yet
