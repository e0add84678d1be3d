"""The events' pure verdicts (`pipeline/events/checks.py`), from plain figures: a day's records balance
with what the tables hold (`reconciliation_verdicts`; the read-back of the quarantine is left to the
integration tests); quarantined records within the ratio or the per-day count (`quarantine_ratio_check`);
a day without archive records fails unless the spec allows empty days (`records_present_check`); a day is
settled once its horizon passed with no hole, or provisional when the spec allows it
(`settled_check`)."""

from __future__ import annotations

from datetime import UTC, datetime

from dagster import MetadataValue

from backfill_platform.components.registry import demo_spec_data
from backfill_platform.pipeline.events.checks import (
    QUARANTINE_RATIO,
    RECONCILIATION,
    RECORDS_PRESENT,
    SETTLED,
    quarantine_ratio_check,
    reconciliation_verdicts,
    records_present_check,
    settled_check,
)
from backfill_platform.pipeline.events.completeness import PartitionCompleteness
from backfill_platform.pipeline.events.ingest import IngestResult, PartitionFigures
from backfill_platform.specs.stream import StreamSpec

SPEC = StreamSpec.model_validate(demo_spec_data("playback"))  # ratio 0.01, no count, no empty days
DAY, OTHER = "2026-10-01", "2026-10-02"
HORIZON = datetime(2026, 10, 3, 6, tzinfo=UTC)


def spec(**changes: object) -> StreamSpec:
    return SPEC.model_copy(update=changes)


def ingested(*figures: PartitionFigures) -> IngestResult:
    return IngestResult(
        files=[],
        partitions={f.partition: f for f in figures},
        seconds=0.0,
        events_snapshot_id=None,
        quarantine_snapshot_id=None,
    )


def day(partition: str = DAY, records: int = 0, quarantined: int = 0, **more: int) -> PartitionFigures:
    figures = PartitionFigures(partition=partition, records=records, **more)
    figures.quarantined["invalid_json"] = quarantined
    return figures


# reconciliation_verdicts


def test_records_read_balance_with_what_the_tables_hold() -> None:
    result = ingested(day(records=100, duplicates=3, erased=2), day(OTHER, records=5))
    verdicts = reconciliation_verdicts(result, {DAY: 90, OTHER: 5}, {DAY: 5})
    assert [(v.check, v.partition, v.passed) for v in verdicts] == [
        (RECONCILIATION, DAY, True),
        (RECONCILIATION, OTHER, True),
    ]
    assert verdicts[0].metadata == {
        "read": 100,
        "written": 90,
        "duplicates": 3,
        "quarantined": 5,
        "erased": 2,
        "erasure_requests_snapshot": "none",
        "unaccounted": 0,
    }


def test_records_unaccounted_for_fail_their_day_with_the_difference() -> None:
    result = ingested(day(records=100, duplicates=3), day(OTHER, records=5))
    verdicts = reconciliation_verdicts(result, {DAY: 90, OTHER: 6}, {DAY: 5})
    assert [v.passed for v in verdicts] == [False, False]
    assert [v.metadata["unaccounted"] for v in verdicts] == [2, -1]  # lost, or one too many


# quarantine_ratio_check


def test_a_day_within_the_ratio_passes_by_the_ratio() -> None:
    [verdict] = quarantine_ratio_check(SPEC, ingested(day(records=1000, quarantined=10)))
    assert (verdict.check, verdict.partition, verdict.passed) == (QUARANTINE_RATIO, DAY, True)
    assert verdict.metadata["ratio"] == MetadataValue.float(0.01)
    assert verdict.metadata["passed_by"] == "ratio"
    assert verdict.metadata["quarantined_invalid_json"] == 10


def test_a_day_above_the_ratio_fails_unless_within_the_per_day_count() -> None:
    result = ingested(day(records=1000, quarantined=11))
    [above] = quarantine_ratio_check(SPEC, result)
    assert not above.passed and above.metadata["passed_by"] == "none"
    [counted] = quarantine_ratio_check(spec(max_quarantined_per_day=11), result)
    assert counted.passed and counted.metadata["passed_by"] == "max_quarantined_per_day"
    [one_short] = quarantine_ratio_check(spec(max_quarantined_per_day=10), result)
    assert not one_short.passed


def test_a_day_without_records_has_ratio_zero() -> None:
    [verdict] = quarantine_ratio_check(SPEC, ingested(day(records=0)))
    assert verdict.passed and verdict.metadata["ratio"] == MetadataValue.float(0.0)
    assert "quarantined_invalid_json" not in verdict.metadata  # reasons with no record are left out


# records_present_check


def test_a_day_without_archive_records_fails_unless_empty_days_are_allowed() -> None:
    result = ingested(day(records=3, archive_files=1), day(OTHER, records=0))
    verdicts = records_present_check(SPEC, result)
    assert [(v.check, v.partition, v.passed) for v in verdicts] == [
        (RECORDS_PRESENT, DAY, True),
        (RECORDS_PRESENT, OTHER, False),
    ]
    assert verdicts[0].metadata == {"read": 3, "archive_files": 1}
    assert all(v.passed for v in records_present_check(spec(allow_empty_partitions=True), result))


# settled_check


def completeness(**changes: object) -> PartitionCompleteness:
    return PartitionCompleteness(**{"day": DAY, "horizon": HORIZON, "horizon_passed": True, **changes})  # type: ignore[arg-type]


def test_a_day_past_its_horizon_without_holes_is_settled() -> None:
    [verdict] = settled_check(SPEC, {DAY: completeness()})
    assert (verdict.check, verdict.partition, verdict.passed) == (SETTLED, DAY, True)
    assert verdict.metadata["settles_at"] == "2026-10-03 06:00 UTC"
    assert verdict.metadata["provisional"] is False
    assert verdict.metadata["problem"] == MetadataValue.text("none")


def test_a_missing_hour_or_a_gap_unsettles_a_day_even_past_its_horizon() -> None:
    missing = completeness(missing_hours=[datetime(2026, 10, 1, 5, tzinfo=UTC)])
    [verdict] = settled_check(spec(provisional_promotion=True), {DAY: missing})
    assert not verdict.passed and verdict.metadata["provisional"] is False
    assert verdict.metadata["missing_hours"] == MetadataValue.text("2026-10-01 05:00 to 05:59")
    [gap] = settled_check(SPEC, {DAY: completeness(gaps=["offsets 5 to 9 of partition 0"])})
    assert not gap.passed and gap.metadata["gaps"] == MetadataValue.text("offsets 5 to 9 of partition 0")


def test_a_day_before_its_horizon_is_unsettled_or_provisional_when_the_spec_allows() -> None:
    pending = completeness(horizon_passed=False, pending_hours=[HORIZON])
    [waiting] = settled_check(SPEC, {DAY: pending})
    assert not waiting.passed and waiting.metadata["hours_still_to_come"] == 1
    [provisional] = settled_check(spec(provisional_promotion=True), {DAY: pending})
    assert provisional.passed and provisional.metadata["provisional"] is True
