"""The blocking checks of a shadow range (`shadow.validate`), one verdict per day, from plain figures:
rows per bucket equal what the events imply and keys are unique (`row_count_check`); the reconciliation
sums equal the events' and the hash sums are recorded (`checksum_check`); every source day a day reads
was ingested, passed its checks and still holds those events (`events_validated_check`,
`_source_day_problem`); divergence from production blocks only above a launched bound and is otherwise a
warning (`divergence_check`, with the Spark comparison replaced by its result); and bucket mappings split
by day (`per_day`). The schema check reads a DataFrame and is left to the integration tests."""

from __future__ import annotations

import pytest
from dagster import MetadataValue

from backfill_platform.pipeline.shadow import validate
from backfill_platform.pipeline.shadow.validate import (
    CHECKSUMS,
    DIVERGENCE,
    EVENTS_VALIDATED,
    ROW_COUNTS,
    _source_day_problem,
    checksum_check,
    divergence_check,
    events_validated_check,
    per_day,
    row_count_check,
)
from backfill_platform.pipeline.validation.buckets import BucketFigures
from backfill_platform.pipeline.validation.checksums import Fingerprint
from backfill_platform.pipeline.validation.day_inputs import DayInputs, JudgedInputs
from backfill_platform.pipeline.validation.divergence import Divergence, PartitionDivergence
from backfill_platform.pipeline.validation.outcome import ShadowValidation
from backfill_platform.pipeline.validation.verdicts import PartitionVerdict
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.loader import builtin_spec_data

SPEC = DatasetSpec.model_validate(builtin_spec_data("views_per_title"))  # reconciles views, watch_seconds
DAY, OTHER = "2026-10-01", "2026-10-02"


def figures(
    rows: int, keys: int | None = None, views: int = 0, watch: int = 0, row_hash: str = "0"
) -> BucketFigures:
    return BucketFigures(
        rows=rows,
        distinct_keys=rows if keys is None else keys,
        sums={"views": views, "watch_seconds": watch},
        key_hash="1",
        row_hash=row_hash,
    )


def failed_rows(verdict: PartitionVerdict) -> list[list]:
    """The failing buckets a verdict shows: [[hour, problem], ...]."""
    table = verdict.metadata["failed_buckets"]
    return [list(record.data.values()) for record in table.records]


def only(verdicts: list[PartitionVerdict], day: str) -> PartitionVerdict:
    [verdict] = [v for v in verdicts if v.partition == day]
    return verdict


# per_day


def test_per_day_splits_buckets_by_their_day() -> None:
    split = per_day({(DAY, 0): "a", (DAY, 5): "b", (OTHER, None): "c"})
    assert split == {DAY: {(DAY, 0): "a", (DAY, 5): "b"}, OTHER: {(OTHER, None): "c"}}
    assert per_day({}) == {}
    assert per_day({}).get(DAY, {}) == {}


# row_count_check


def test_rows_equal_to_what_the_events_imply_pass_with_the_day_s_numbers() -> None:
    expected = {(DAY, 0): figures(3), (DAY, 1): figures(4), (OTHER, 0): figures(9)}
    actual = {(DAY, 0): figures(3), (DAY, 1): figures(4), (OTHER, 0): figures(9)}
    [verdict] = row_count_check([DAY], expected, actual)
    assert (verdict.check, verdict.partition, verdict.passed, verdict.blocking) == (
        ROW_COUNTS,
        DAY,
        True,
        True,
    )
    assert {
        k: verdict.metadata[k] for k in ("buckets_checked", "buckets_failed", "rows", "expected_rows")
    } == {
        "buckets_checked": 2,
        "buckets_failed": 0,
        "rows": 7,
        "expected_rows": 7,
    }
    assert failed_rows(verdict) == []


def test_a_bucket_with_other_rows_than_the_events_imply_fails_its_day_only() -> None:
    expected = {(DAY, 0): figures(3), (DAY, 1): figures(4), (OTHER, 0): figures(9)}
    actual = {(DAY, 0): figures(3), (DAY, 1): figures(2), (OTHER, 0): figures(9)}
    verdicts = row_count_check([DAY, OTHER], expected, actual)
    bad, good = only(verdicts, DAY), only(verdicts, OTHER)
    assert not bad.passed and good.passed
    assert (bad.metadata["buckets_failed"], bad.metadata["rows"], bad.metadata["expected_rows"]) == (1, 5, 7)
    assert failed_rows(bad) == [[1, "2 rows, events imply 4"]]


def test_equal_rows_with_duplicate_keys_fail() -> None:
    expected = {(DAY, 0): figures(5)}
    actual = {(DAY, 0): figures(5, keys=3)}
    [verdict] = row_count_check([DAY], expected, actual)
    assert not verdict.passed
    assert failed_rows(verdict) == [[0, "2 duplicate keys"]]


def test_a_bucket_only_in_the_shadow_or_only_in_the_events_fails() -> None:
    expected = {(DAY, 0): figures(3)}
    actual = {(DAY, 0): figures(3), (DAY, 7): figures(2)}
    [verdict] = row_count_check([DAY], expected, actual)
    assert not verdict.passed
    assert verdict.metadata["buckets_checked"] == 2
    assert failed_rows(verdict) == [[7, "2 rows, events imply 0"]]

    [verdict] = row_count_check([DAY], {(DAY, 0): figures(3), (DAY, 7): figures(2)}, {(DAY, 0): figures(3)})
    assert not verdict.passed
    assert failed_rows(verdict) == [[7, "0 rows, events imply 2"]]


def test_a_day_without_buckets_on_either_side_passes_with_nothing_checked() -> None:
    # Zero expected, zero found: only `events_validated` tells such a day from one never loaded.
    [verdict] = row_count_check([OTHER], {(DAY, 0): figures(3)}, {(DAY, 0): figures(1)})
    assert verdict.passed
    assert (
        verdict.metadata["buckets_checked"],
        verdict.metadata["rows"],
        verdict.metadata["expected_rows"],
    ) == (
        0,
        0,
        0,
    )


def test_a_daily_bucket_is_shown_as_the_whole_day() -> None:
    [verdict] = row_count_check([DAY], {(DAY, None): figures(3)}, {(DAY, None): figures(4)})
    assert not verdict.passed
    assert failed_rows(verdict) == [["whole day", "4 rows, events imply 3"]]
    assert [c.name for c in verdict.metadata["failed_buckets"].schema.columns] == ["bucket", "problem"]


# checksum_check


def test_sums_equal_to_the_events_pass_and_the_day_s_sums_and_hash_sums_are_recorded() -> None:
    expected = {(DAY, 0): figures(2, views=3, watch=100), (DAY, 1): figures(1, views=1, watch=20)}
    actual = {
        (DAY, 0): figures(2, views=3, watch=100, row_hash="18446744073709551615"),
        (DAY, 1): figures(1, views=1, watch=20, row_hash="5"),
    }
    [verdict] = checksum_check(SPEC, [DAY], expected, actual)
    assert (verdict.check, verdict.partition, verdict.passed) == (CHECKSUMS, DAY, True)
    assert verdict.metadata["buckets_checked"] == 2 and verdict.metadata["buckets_failed"] == 0
    assert (verdict.metadata["sum_views"], verdict.metadata["sum_watch_seconds"]) == (4, 120)
    assert verdict.metadata["row_hash_sum"] == "18446744073709551620"  # exact past 64 bits
    assert verdict.metadata["key_hash_sum"] == "2"


def test_a_bucket_whose_sum_differs_from_the_events_fails_naming_the_column_and_both_sums() -> None:
    expected = {(DAY, 0): figures(2, views=3, watch=100), (DAY, 1): figures(1, views=1, watch=20)}
    actual = {(DAY, 0): figures(2, views=3, watch=100), (DAY, 1): figures(1, views=2, watch=25)}
    [verdict] = checksum_check(SPEC, [DAY], expected, actual)
    assert not verdict.passed
    assert verdict.metadata["buckets_failed"] == 1
    assert failed_rows(verdict) == [
        [1, "views: shadow 2, events imply 1; watch_seconds: shadow 25, events imply 20"]
    ]
    assert [c.name for c in verdict.metadata["failed_buckets"].schema.columns] == ["hour", "difference"]


def test_equal_sums_with_other_hash_sums_pass_the_hash_sums_are_recorded_not_compared() -> None:
    expected = {(DAY, 0): figures(2, views=3)}
    one = checksum_check(SPEC, [DAY], expected, {(DAY, 0): figures(2, views=3, row_hash="10")})
    two = checksum_check(SPEC, [DAY], expected, {(DAY, 0): figures(2, views=3, row_hash="11")})
    assert one[0].passed and two[0].passed
    assert (one[0].metadata["row_hash_sum"], two[0].metadata["row_hash_sum"]) == ("10", "11")


def test_a_bucket_with_sums_only_in_the_shadow_fails_against_zero() -> None:
    [verdict] = checksum_check(SPEC, [DAY], {}, {(DAY, 4): figures(1, views=1)})
    assert not verdict.passed
    assert failed_rows(verdict) == [[4, "views: shadow 1, events imply 0"]]


def test_a_bucket_only_in_the_shadow_with_zero_sums_passes_the_checksums() -> None:
    # The row count check is the one to refuse it: these sums reconcile.
    [verdict] = checksum_check(SPEC, [DAY], {}, {(DAY, 4): figures(1)})
    assert verdict.passed and verdict.metadata["buckets_checked"] == 1


# _source_day_problem and events_validated_check

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
    assert _source_day_problem(ingestion(), EVENTS) is None
    assert _source_day_problem(ingestion(events=Fingerprint.EMPTY), Fingerprint.EMPTY) is None


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
    assert _source_day_problem(row, now) == problem


def one_source(day_rows: dict[str, dict | None], fingerprints: dict[str, Fingerprint]) -> JudgedInputs:
    return JudgedInputs(
        spec=SPEC,
        day_fingerprints={"playback": fingerprints},
        ingestions={"playback": {day: row for day, row in day_rows.items() if row is not None}},
        inputs={day: DayInputs({"playback": fingerprints[day]}) for day in fingerprints},
        reads={day: [("playback", day)] for day in fingerprints},
    )


def test_a_day_whose_events_passed_and_are_unchanged_is_validated() -> None:
    judged = one_source({DAY: ingestion(provisional=True)}, {DAY: EVENTS})
    [verdict] = events_validated_check([DAY], judged)
    assert (verdict.check, verdict.partition, verdict.passed) == (EVENTS_VALIDATED, DAY, True)
    assert verdict.metadata == {
        "events_rows": 500,
        "events_run": "ingest-1",
        "provisional": True,
        "problem": "none",
    }


def test_a_day_never_ingested_fails_rather_than_validating_zero_rows() -> None:
    judged = one_source({DAY: ingestion(), OTHER: None}, {DAY: EVENTS, OTHER: Fingerprint.EMPTY})
    verdicts = events_validated_check([DAY, OTHER], judged)
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
        day_fingerprints={
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
        inputs={DAY: DayInputs({"playback": EVENTS, "impressions": impressions})},
        reads={DAY: [("playback", DAY), ("impressions", before), ("impressions", DAY)]},
    )
    [verdict] = events_validated_check([DAY], judged)
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
    [verdict] = events_validated_check([DAY], judged)
    assert verdict.passed and verdict.metadata["problem"] == "none"


# divergence_check


@pytest.fixture
def compared(monkeypatch: pytest.MonkeyPatch) -> Divergence:
    """What the comparison with production found; the check reads it instead of joining two tables."""
    result = Divergence(notes={OTHER: f"production has no rows for {OTHER}: all 10 rows are new"})

    def compare(shadow, production, spec, days):
        assert (shadow, production, spec) == ("shadow", "production", SPEC)
        return result

    monkeypatch.setattr(validate, "compare", compare)
    return result


def check(days: list[str], max_ratio: float | None) -> tuple[list[PartitionVerdict], ShadowValidation]:
    validation = ShadowValidation(days=days)
    return divergence_check(SPEC, "shadow", "production", days, max_ratio, validation), validation


def test_divergence_within_a_launched_bound_passes_and_above_it_blocks(compared: Divergence) -> None:
    compared.partitions[DAY] = PartitionDivergence(candidate_rows=100, production_rows=100, changed=10)  # 0.1
    [at_bound], validation = check([DAY], 0.1)
    assert (at_bound.check, at_bound.partition, at_bound.passed, at_bound.blocking) == (
        DIVERGENCE,
        DAY,
        True,
        True,
    )
    assert validation.divergence is compared
    [above], _ = check([DAY], 0.09)
    assert not above.passed and above.blocking
    assert above.metadata["ratio"] == MetadataValue.float(0.1)
    assert above.metadata["max_ratio"] == MetadataValue.float(0.09)
    assert (above.metadata["changed"], above.metadata["diverging_rows"]) == (10, 10)


def test_the_ratio_counts_every_kind_against_the_larger_side(compared: Divergence) -> None:
    compared.partitions[DAY] = PartitionDivergence(
        candidate_rows=80, production_rows=100, only_in_candidate=5, only_in_production=25, changed=10
    )
    [verdict], _ = check([DAY], 0.4)
    assert verdict.passed  # 40 / 100
    assert {
        k: verdict.metadata[k]
        for k in ("shadow_rows", "production_rows", "only_in_shadow", "only_in_production")
    } == {
        "shadow_rows": 80,
        "production_rows": 100,
        "only_in_shadow": 5,
        "only_in_production": 25,
    }
    [verdict], _ = check([DAY], 0.39)
    assert not verdict.passed


def test_without_a_bound_divergence_is_a_warning_and_a_first_promotion_none(compared: Divergence) -> None:
    compared.partitions[DAY] = PartitionDivergence(candidate_rows=100, production_rows=100, changed=1)
    compared.partitions[OTHER] = PartitionDivergence(
        candidate_rows=10, production_rows=0, only_in_candidate=10
    )
    verdicts, _ = check([DAY, OTHER], None)
    changed, first = only(verdicts, DAY), only(verdicts, OTHER)
    assert not changed.passed and not changed.blocking
    assert first.passed and not first.blocking
    assert changed.metadata["max_ratio"] == MetadataValue.text("none")
    assert first.metadata["sample"] == MetadataValue.text(
        f"production has no rows for {OTHER}: all 10 rows are new"
    )


def test_without_a_bound_an_identical_day_passes(compared: Divergence) -> None:
    compared.partitions[DAY] = PartitionDivergence(candidate_rows=100, production_rows=100)
    compared.partitions[OTHER] = PartitionDivergence()  # empty on both sides
    verdicts, _ = check([DAY, OTHER], None)
    assert all(v.passed and not v.blocking for v in verdicts)
    assert only(verdicts, DAY).metadata["sample"] == MetadataValue.text("no differences")
    assert only(verdicts, OTHER).metadata["ratio"] == MetadataValue.float(0.0)


def test_a_bound_holds_a_first_promotion_into_an_empty_production_to_its_ratio(compared: Divergence) -> None:
    # Unlike the warning, a bound counts a day production never had as all divergence (ratio 1.0).
    compared.partitions[OTHER] = PartitionDivergence(
        candidate_rows=10, production_rows=0, only_in_candidate=10
    )
    [verdict], _ = check([OTHER], 0.5)
    assert not verdict.passed and verdict.blocking
    assert verdict.metadata["ratio"] == MetadataValue.float(1.0)


def test_a_day_with_differing_rows_shows_them_as_its_sample(compared: Divergence) -> None:
    compared.partitions[DAY] = PartitionDivergence(candidate_rows=2, production_rows=2, changed=1)
    compared.sample_header = ["_kind", "title_id"]
    compared.samples[DAY] = [["changed", "t-1"]]
    [verdict], _ = check([DAY], None)
    sample = verdict.metadata["sample"]
    assert [record.data for record in sample.records] == [{"_kind": "changed", "title_id": "t-1"}]
