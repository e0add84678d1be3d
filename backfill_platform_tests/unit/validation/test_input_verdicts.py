"""Pure verdicts over what a dataset day read (`validation/input_verdicts.py`): every source day a day
reads was ingested, passed its checks and still holds those events (`events_validated_verdicts`), and what
is wrong with one that did not (`source_day_problem`)."""

from __future__ import annotations

import pytest

from backfill_platform.components.registry import demo_spec_data
from backfill_platform.pipeline.shadow.checks import EVENTS_VALIDATED
from backfill_platform.pipeline.validation.fingerprints import Fingerprint
from backfill_platform.pipeline.validation.input_verdicts import events_validated_verdicts, source_day_problem
from backfill_platform.pipeline.validation.partition_inputs import JudgedInputs, PartitionInputs
from backfill_platform.pipeline.validation.verdicts import PartitionVerdict
from backfill_platform.specs.dataset import DatasetSpec

SPEC = DatasetSpec.model_validate(demo_spec_data("views_per_title"))
DAY, OTHER = "2026-10-01", "2026-10-02"


def only(verdicts: list[PartitionVerdict], day: str) -> PartitionVerdict:
    [verdict] = [v for v in verdicts if v.partition == day]
    return verdict


# source_day_problem and events_validated_verdicts

EVENTS = Fingerprint(500, "4242")


def ingestion(
    run_id: str = "ingest-1", passed: bool | None = True, events: Fingerprint = EVENTS, **more
) -> dict:
    return {
        "run_id": run_id,
        "checks_passed": passed,
        "failed_checks": "settled",
        **events.columns("events"),
        **more,
    }


def test_a_source_day_ingested_checked_and_unchanged_has_no_problem() -> None:
    assert source_day_problem(ingestion(), EVENTS) is None
    assert source_day_problem(ingestion(events=Fingerprint.EMPTY), Fingerprint.EMPTY) is None


@pytest.mark.parametrize(
    ("row", "now", "problem"),
    [
        (None, EVENTS, "events never ingested"),
        (
            ingestion(passed=None),
            EVENTS,
            "ingested before verdicts were recorded: re-materialize the events of this day",
        ),
        (ingestion(run_id="ingest-2", passed=False), EVENTS, "events failed settled in run ingest-2"),
        (
            ingestion(run_id="ingest-3"),
            Fingerprint(500, "4243"),
            "events changed after their checks in run ingest-3: re-materialize them",
        ),
        (
            ingestion(run_id="ingest-3"),
            Fingerprint.EMPTY,
            "events changed after their checks in run ingest-3: re-materialize them",
        ),
    ],
    ids=["never-ingested", "no-verdicts", "failed", "same-count-other-hash", "emptied"],
)
def test_a_source_day_problem_says_what_is_wrong(row: dict | None, now: Fingerprint, problem: str) -> None:
    assert source_day_problem(row, now) == problem


def one_source(day_rows: dict[str, dict | None], fingerprints: dict[str, Fingerprint]) -> JudgedInputs:
    return JudgedInputs(
        spec=SPEC,
        fingerprints_by_partition={"playback": fingerprints},
        ingestions={"playback": {day: row for day, row in day_rows.items() if row is not None}},
        inputs={day: PartitionInputs({"playback": fingerprints[day]}) for day in fingerprints},
        reads={day: [("playback", day)] for day in fingerprints},
    )


def test_a_day_whose_events_passed_and_are_unchanged_is_validated() -> None:
    judged = one_source({DAY: ingestion(provisional=True)}, {DAY: EVENTS})
    [verdict] = events_validated_verdicts(EVENTS_VALIDATED, [DAY], judged)
    assert (verdict.check, verdict.partition, verdict.passed) == (EVENTS_VALIDATED, DAY, True)
    assert verdict.metadata == {
        "events_rows": 500,
        "events_run": "ingest-1",
        "provisional": True,
        "problem": "none",
    }


def test_a_day_never_ingested_fails_rather_than_validating_zero_rows() -> None:
    judged = one_source({DAY: ingestion(), OTHER: None}, {DAY: EVENTS, OTHER: Fingerprint.EMPTY})
    verdicts = events_validated_verdicts(EVENTS_VALIDATED, [DAY, OTHER], judged)
    assert only(verdicts, DAY).passed
    missing = only(verdicts, OTHER)
    assert not missing.passed
    # One stream: the day is the source day, the problem names no source.
    assert missing.metadata == {
        "events_rows": 0,
        "events_run": "none",
        "provisional": False,
        "problem": "events never ingested",
    }


def test_a_join_fails_when_one_source_day_fails_naming_the_stream_and_day() -> None:
    before = "2026-09-30"
    impressions = Fingerprint(30, "7")
    judged = JudgedInputs(
        spec=SPEC,
        fingerprints_by_partition={
            "playback": {DAY: EVENTS},
            "impressions": {DAY: impressions, before: Fingerprint(3, "1")},
        },
        ingestions={
            "playback": {DAY: ingestion(run_id="p-1")},
            "impressions": {
                DAY: ingestion(run_id="i-1", events=impressions),
                before: ingestion(run_id="i-0", passed=False),
            },
        },
        inputs={DAY: PartitionInputs({"playback": EVENTS, "impressions": impressions})},
        reads={DAY: [("playback", DAY), ("impressions", before), ("impressions", DAY)]},
    )
    [verdict] = events_validated_verdicts(EVENTS_VALIDATED, [DAY], judged)
    assert not verdict.passed
    assert verdict.metadata["problem"] == "impressions 2026-09-30: events failed settled in run i-0"
    assert verdict.metadata["events_run"] == "i-0, i-1, p-1"
    assert verdict.metadata["inputs"] == "playback 2026-10-01, impressions 2026-09-30, impressions 2026-10-01"
    assert (
        verdict.metadata["events_rows"],
        verdict.metadata["playback_rows"],
        verdict.metadata["impressions_rows"],
    ) == (
        530,
        500,
        30,
    )

    judged.ingestions["impressions"][before] = ingestion(run_id="i-0", events=Fingerprint(3, "1"))
    [verdict] = events_validated_verdicts(EVENTS_VALIDATED, [DAY], judged)
    assert verdict.passed and verdict.metadata["problem"] == "none"
