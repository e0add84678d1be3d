"""`plan`, `status`, `sweep` and `report` over hour keys (issue 37): a partition is an hour of an hourly
dataset, named by its key (`2026-10-01-14:00`), and two hours of one day are never merged into the day;
a daily dataset's output is unchanged. Pure computations over ledger rows as PyIceberg returns them (no
catalog, no Spark session)."""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, date, datetime, timedelta

import pytest

from backfill_platform.components.registry import demo_spec_data
from backfill_platform.pipeline.ledger.ledger import IngestionRow, LedgerRow
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.grain import DAILY, HOURLY
from backfill_platform.specs.stream import StreamSpec
from backfill_platform_tests.support.specs import mutated

DAY = date(2026, 10, 1)
RECORDED = datetime(2026, 10, 3, tzinfo=UTC)


def hourly_dataset() -> DatasetSpec:
    """The built-in views dataset, partitioned by the hour its `event_hour` timestamp starts."""
    raw = demo_spec_data("views_per_title")
    columns = {"event_hour": "timestamp", "title_id": "string", "views": "long", "watch_seconds": "long",
               "unique_viewers": "long"}  # fmt: skip
    raw |= {"partition_column": "event_hour", "bucket": "partition", "bucket_column": None,
            "key_columns": ["event_hour", "title_id"], "columns": columns}  # fmt: skip
    return DatasetSpec.model_validate(raw)


def validation(key: str, run: str, passed: bool = True, promoted: int | None = None) -> dict:
    row = LedgerRow(
        dataset="views_per_title", version="v2", partition_date=DAY, run_id=run, recorded_at=RECORDED,
        stream="playback", checks_passed=passed, failed_checks=None if passed else "['checksums_per_bucket']",
        events_rows=10, events_row_hash="7", shadow_rows=3, promoted_snapshot_id=promoted,
        promoted_at=RECORDED if promoted else None, promotion_run_id="p1" if promoted else None,
        partition_key=key,
    )  # fmt: skip
    return asdict(row)


def ingestion(key: str) -> dict:
    row = IngestionRow(
        stream="playback", partition_date=DAY, run_id="e1", recorded_at=RECORDED - timedelta(hours=1),
        archive_files=2, records=10, written=10, duplicates=0, conflicting_ids=0, quarantined=0, late=0,
        events_snapshot_id=1, checks_passed=True, failed_checks=None, events_rows=10, events_row_hash="7",
        partition_key=key,
    )  # fmt: skip
    return asdict(row)


def test_status_of_an_hourly_dataset_has_a_row_per_hour(monkeypatch):
    from backfill_platform.operations import status

    rows = [validation("2026-10-01-14:00", "r1", promoted=41), validation("2026-10-01-15:00", "r1", False)]
    ingestions = [ingestion("2026-10-01-14:00"), ingestion("2026-10-01-15:00"), ingestion("2026-10-01-16:00")]
    monkeypatch.setattr(status, "ledger_rows", lambda _catalog, _name: rows)
    monkeypatch.setattr(status, "ingestion_rows", lambda _catalog, _name: ingestions)
    found = status.dataset_status(None, hourly_dataset(), {"playback": HOURLY})  # the stream is hourly
    assert [(s.key, s.state) for s in found] == [
        ("2026-10-01-14:00", "promoted"),
        ("2026-10-01-15:00", "blocked"),
        ("2026-10-01-16:00", "ingested"),
    ]
    table = status.status_table(found)
    assert table.title == "status per dataset and hour (from the ledger)"
    assert [c.header for c in table.columns][:2] == ["dataset", "hour"]


def test_a_daily_row_from_before_hours_is_keyed_by_its_day(monkeypatch):
    from backfill_platform.operations import status

    old = validation("unused", "r0", promoted=40) | {"partition_key": None}
    monkeypatch.setattr(status, "ledger_rows", lambda _catalog, _name: [old])
    monkeypatch.setattr(status, "ingestion_rows", lambda _catalog, _name: [])
    daily = DatasetSpec.model_validate(demo_spec_data("views_per_title"))
    found = status.dataset_status(None, daily)
    assert [(s.key, s.state) for s in found] == [("2026-10-01", "promoted")]
    assert status.status_table(found).title == "status per dataset and day (from the ledger)"


@pytest.mark.parametrize(
    ("dataset", "divergent", "commands"),
    [
        (
            hourly_dataset,
            ["2026-10-01-14:00", "2026-10-01-15:00", "2026-10-01-17:00"],
            [
                "--start 2026-10-01T14:00 --end 2026-10-01T16:00",
                "--start 2026-10-01T17:00 --end 2026-10-01T18:00",
            ],
        ),
        (
            lambda: DatasetSpec.model_validate(demo_spec_data("views_per_title")),
            ["2026-10-01", "2026-10-02", "2026-10-04"],
            ["--start 2026-10-01 --end 2026-10-03", "--start 2026-10-04 --end 2026-10-05"],
        ),
    ],
)
def test_sweep_proposes_a_backfill_per_contiguous_span_of_its_grain(dataset, divergent, commands):
    from backfill_platform.operations.sweep import PartitionSweep, Sweep
    from backfill_platform.pipeline.validation.fingerprints import Fingerprint

    spec = dataset()
    swept = [PartitionSweep(key, 1, 1, {}, Fingerprint.EMPTY, None, problems=["x"]) for key in divergent]
    result = Sweep(spec, 1, 2, swept)
    assert result.commands() == [f"backfill-platform backfill --dataset {spec.name} {c}" for c in commands]


def test_report_keeps_two_hours_of_one_day_apart(monkeypatch):
    from backfill_platform.operations import report

    rows = [validation("2026-10-01-15:00", "r1"), validation("2026-10-01-14:00", "r1", promoted=41)]
    tables = {"ledger": rows, "ingestions": []}
    monkeypatch.setattr(report, "open_catalog", lambda: None)
    monkeypatch.setattr(
        report, "read_rows", lambda _c, table, column, value: tables[table] if column == "run_id" else []
    )
    monkeypatch.setattr(report, "commits_of_backfill", lambda *_: [])
    markdown = report.report_markdown(report.build_report("r1", {"r1"}))
    assert "2 hour(s): 2 passed their checks, 0 failed; 1 promoted" in markdown
    assert "Per hour, from `platform.ledger`:" in markdown
    cells = [line.split("|")[1].strip() for line in markdown.splitlines() if line.startswith("| 2026")]
    assert cells == ["2026-10-01-14:00", "2026-10-01-15:00"]


def test_plan_of_an_hourly_stream_names_its_hours():
    from backfill_platform.operations.plan import (
        PartitionPlan,
        Plan,
        plan_summary,
        plan_table,
    )

    stream = StreamSpec.model_validate(mutated(partition_grain="hour"))
    window = (datetime(2026, 10, 1, 13, tzinfo=UTC), datetime(2026, 10, 1, 16, tzinfo=UTC))
    settled = datetime(2026, 10, 1, 16, tzinfo=UTC)
    hours = [PartitionPlan(f"2026-10-01-{h}:00", window, [], 0, [], settled) for h in (14, 15)]
    plan = Plan(stream, [], hours, 0, 0, 0, [], None)
    table = plan_table(plan)
    assert table.columns[0].header == "hour" and "each hour reads ingestion hours [hour -" in str(table.title)
    assert plan_summary(plan)[0].startswith("2 hour(s) read 0 distinct archive files")


def test_a_lookback_reads_whole_hours_before_the_range_never_before_the_stream():
    from backfill_platform.operations.plan import lookback_start

    joined = DatasetSpec.model_validate(demo_spec_data("attributed_plays"))  # impressions: 30 minutes back
    impressions = StreamSpec.model_validate(mutated(name="impressions", partition_grain="hour"))
    playback = StreamSpec.model_validate(mutated(partition_grain="hour"))
    first = datetime(2026, 10, 5, 14, tzinfo=UTC)
    assert lookback_start(joined, impressions, first) == first - HOURLY.length
    assert lookback_start(joined, playback, first) is None
    opening = HOURLY.start(impressions.first_partition)
    assert lookback_start(joined, impressions, opening) == opening
    daily = StreamSpec.model_validate(mutated(name="impressions"))
    assert lookback_start(joined, daily, DAY) == max(HOURLY.start(DAY) - DAILY.length, opening)


def test_ranges_words_and_bounds():
    from backfill_platform.operations.ranges import option_text, partition_noun, widened

    at = datetime(2026, 10, 1, 14, tzinfo=UTC)
    assert option_text(HOURLY, at) == "2026-10-01T14:00" and option_text(DAILY, DAY) == "2026-10-01"
    assert partition_noun(["2026-10-01"]) == "day" and partition_noun([]) == "day"
    assert partition_noun(["2026-10-01-14:00", "2026-10-01"], plural=True) == "days or hours"
    given = (datetime(2026, 10, 1, 14, 10), datetime(2026, 10, 1, 15, 40))
    assert widened(HOURLY, given, (at, at + 2 * HOURLY.length)) == (
        "2026-10-01T14:10 to 2026-10-01T15:40 covers whole hours: 2026-10-01T14:00 to 2026-10-01T16:00 (exclusive)"
    )
    assert widened(DAILY, (datetime(2026, 10, 1), datetime(2026, 10, 3)), (DAY, date(2026, 10, 3))) is None


def test_status_judges_a_day_rolled_up_from_hours_by_their_fingerprints(monkeypatch):
    """A New York day validated, then its 25 hours re-derived with the same rows: the hours' fingerprints add
    up to what the day's validation recorded, so the day is as it was (promoted), not stale — as the
    promotion gate judges. One hour re-derived with one more row: stale, naming the hours re-derived since."""
    from backfill_platform.operations import status

    spec = DatasetSpec.model_validate(demo_spec_data("plays_new_york"))
    day = "2026-11-01"  # summer time ends: 04:00 UTC to 05:00 UTC the next day
    hours = [(datetime(2026, 11, 1, 4, tzinfo=UTC) + timedelta(hours=h)).strftime("%Y-%m-%d-%H:%M") for h in range(25)]  # fmt: skip
    recorded = validation(day, "v1", promoted=41) | {
        "dataset": spec.name, "version": "v1", "stream": "playback_hourly", "partition_date": date(2026, 11, 1),
        "inputs": f"playback_hourly={10 * 25}/{7 * 25}",
    }  # fmt: skip
    later = RECORDED + timedelta(hours=2)  # every hour re-derived after the validation
    rederived = [
        ingestion(h) | {"stream": "playback_hourly", "recorded_at": later, "run_id": "e2"} for h in hours
    ]
    monkeypatch.setattr(status, "ledger_rows", lambda _catalog, _name: [recorded])
    monkeypatch.setattr(status, "ingestion_rows", lambda _catalog, _name: rederived)
    grains = {"playback_hourly": HOURLY}
    assert [(s.key, s.state) for s in status.dataset_status(None, spec, grains)] == [(day, "promoted")]

    rederived[24] |= {"events_rows": 11, "events_row_hash": "9"}  # the day's last hour gained a row
    (found,) = status.dataset_status(None, spec, grains)
    assert found.state == "stale" and "playback_hourly 2026-11-01-04:00 re-derived in run e2" in found.detail
    assert "(25 of the 25 partitions it reads)" in found.detail


def test_a_new_york_day_records_and_reports_the_25_hours_it_read(monkeypatch):
    """The ledger's `input_partitions` of the day summer time ends in New York (issue 61): what the shadow
    run read, counted per source, and the report's column of it."""
    from backfill_platform.operations import report
    from backfill_platform.pipeline.validation.partition_inputs import JudgedInputs
    from backfill_platform_tests.support.datasets import local_daily_data

    spec = DatasetSpec.model_validate(local_daily_data("plays_new_york", "playback", "America/New_York"))
    day_start, day_end = spec.grain.bounds("2026-11-01")
    judged = JudgedInputs(
        spec=spec, reads={"2026-11-01": [("playback", h) for h in HOURLY.keys_between(day_start, day_end)]}
    )
    assert judged.input_partitions("2026-11-01") == "playback=25"
    assert judged.input_partitions("2026-11-02") is None  # not read by this run

    row = validation("2026-11-01", "r1", promoted=41) | {"input_partitions": "playback=25"}
    tables = {"ledger": [row], "ingestions": []}
    monkeypatch.setattr(report, "open_catalog", lambda: None)
    monkeypatch.setattr(
        report, "read_rows", lambda _c, table, column, value: tables[table] if column == "run_id" else []
    )
    monkeypatch.setattr(report, "commits_of_backfill", lambda *_: [])
    markdown = report.report_markdown(report.build_report("r1", {"r1"}))
    header = next(line for line in markdown.splitlines() if line.startswith("| day"))
    cells = next(line for line in markdown.splitlines() if line.startswith("| 2026-11-01"))
    assert (
        header.split("|")[-2].strip() == "input partitions" and cells.split("|")[-2].strip() == "playback=25"
    )
