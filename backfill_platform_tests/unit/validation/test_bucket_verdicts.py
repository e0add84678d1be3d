"""Pure verdicts over bucket figures (`validation/bucket_verdicts.py`), one per day, from plain figures:
rows per bucket equal what the events imply and keys are unique (`row_count_verdicts`); the reconciliation
sums equal the events' and the hash sums are recorded (`checksum_verdicts`); bucket mappings split by
partition (`split_by_partition`). The shadow's check names them (`shadow/checks.py`); the sweep runs them
on production."""

from __future__ import annotations

from backfill_platform.components.registry import demo_spec_data
from backfill_platform.pipeline.shadow.checks import CHECKSUMS, ROW_COUNTS
from backfill_platform.pipeline.validation.bucket_verdicts import (
    SAMPLE_BUCKETS,
    checksum_verdicts,
    row_count_verdicts,
    split_by_partition,
)
from backfill_platform.pipeline.validation.buckets import BucketFigures
from backfill_platform.pipeline.validation.verdicts import PartitionVerdict
from backfill_platform.specs.dataset import DatasetSpec

SPEC = DatasetSpec.model_validate(demo_spec_data("views_per_title"))  # reconciles views, watch_seconds
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


# split_by_partition


def test_a_bucket_mapping_is_split_by_partition() -> None:
    split = split_by_partition({(DAY, 0): "a", (DAY, 5): "b", (OTHER, None): "c"})
    assert split == {DAY: {(DAY, 0): "a", (DAY, 5): "b"}, OTHER: {(OTHER, None): "c"}}
    assert split_by_partition({}) == {}
    assert split_by_partition({}).get(DAY, {}) == {}


# row_count_verdicts


def test_rows_equal_to_what_the_events_imply_pass_with_the_day_s_numbers() -> None:
    expected = {(DAY, 0): figures(3), (DAY, 1): figures(4), (OTHER, 0): figures(9)}
    actual = {(DAY, 0): figures(3), (DAY, 1): figures(4), (OTHER, 0): figures(9)}
    [verdict] = row_count_verdicts(ROW_COUNTS, [DAY], expected, actual)
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
    verdicts = row_count_verdicts(ROW_COUNTS, [DAY, OTHER], expected, actual)
    bad, good = only(verdicts, DAY), only(verdicts, OTHER)
    assert not bad.passed and good.passed
    assert (bad.metadata["buckets_failed"], bad.metadata["rows"], bad.metadata["expected_rows"]) == (1, 5, 7)
    assert failed_rows(bad) == [[1, "2 rows, events imply 4"]]


def test_equal_rows_with_duplicate_keys_fail() -> None:
    expected = {(DAY, 0): figures(5)}
    actual = {(DAY, 0): figures(5, keys=3)}
    [verdict] = row_count_verdicts(ROW_COUNTS, [DAY], expected, actual)
    assert not verdict.passed
    assert failed_rows(verdict) == [[0, "2 duplicate keys"]]


def test_a_bucket_only_in_the_shadow_or_only_in_the_events_fails() -> None:
    expected = {(DAY, 0): figures(3)}
    actual = {(DAY, 0): figures(3), (DAY, 7): figures(2)}
    [verdict] = row_count_verdicts(ROW_COUNTS, [DAY], expected, actual)
    assert not verdict.passed
    assert verdict.metadata["buckets_checked"] == 2
    assert failed_rows(verdict) == [[7, "2 rows, events imply 0"]]

    [verdict] = row_count_verdicts(
        ROW_COUNTS, [DAY], {(DAY, 0): figures(3), (DAY, 7): figures(2)}, {(DAY, 0): figures(3)}
    )
    assert not verdict.passed
    assert failed_rows(verdict) == [[7, "0 rows, events imply 2"]]


def test_a_day_without_buckets_on_either_side_passes_with_nothing_checked() -> None:
    # Zero expected, zero found: only `events_validated` tells such a day from one never loaded.
    [verdict] = row_count_verdicts(ROW_COUNTS, [OTHER], {(DAY, 0): figures(3)}, {(DAY, 0): figures(1)})
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
    [verdict] = row_count_verdicts(ROW_COUNTS, [DAY], {(DAY, None): figures(3)}, {(DAY, None): figures(4)})
    assert not verdict.passed
    assert failed_rows(verdict) == [["whole day", "4 rows, events imply 3"]]
    assert [c.name for c in verdict.metadata["failed_buckets"].schema.columns] == ["bucket", "problem"]


# checksum_verdicts


def test_sums_equal_to_the_events_pass_and_the_day_s_sums_and_hash_sums_are_recorded() -> None:
    expected = {(DAY, 0): figures(2, views=3, watch=100), (DAY, 1): figures(1, views=1, watch=20)}
    actual = {
        (DAY, 0): figures(2, views=3, watch=100, row_hash="18446744073709551615"),
        (DAY, 1): figures(1, views=1, watch=20, row_hash="5"),
    }
    [verdict] = checksum_verdicts(CHECKSUMS, SPEC, [DAY], expected, actual)
    assert (verdict.check, verdict.partition, verdict.passed) == (CHECKSUMS, DAY, True)
    assert verdict.metadata["buckets_checked"] == 2 and verdict.metadata["buckets_failed"] == 0
    assert (verdict.metadata["sum_views"], verdict.metadata["sum_watch_seconds"]) == (4, 120)
    assert verdict.metadata["row_hash_sum"] == "18446744073709551620"  # exact past 64 bits
    assert verdict.metadata["key_hash_sum"] == "2"


def test_a_bucket_whose_sum_differs_from_the_events_fails_naming_the_column_and_both_sums() -> None:
    expected = {(DAY, 0): figures(2, views=3, watch=100), (DAY, 1): figures(1, views=1, watch=20)}
    actual = {(DAY, 0): figures(2, views=3, watch=100), (DAY, 1): figures(1, views=2, watch=25)}
    [verdict] = checksum_verdicts(CHECKSUMS, SPEC, [DAY], expected, actual)
    assert not verdict.passed
    assert verdict.metadata["buckets_failed"] == 1
    assert failed_rows(verdict) == [
        [1, "views: shadow 2, events imply 1; watch_seconds: shadow 25, events imply 20"]
    ]
    assert [c.name for c in verdict.metadata["failed_buckets"].schema.columns] == ["hour", "difference"]


def test_equal_sums_with_other_hash_sums_pass_the_hash_sums_are_recorded_not_compared() -> None:
    expected = {(DAY, 0): figures(2, views=3)}
    one = checksum_verdicts(CHECKSUMS, SPEC, [DAY], expected, {(DAY, 0): figures(2, views=3, row_hash="10")})
    two = checksum_verdicts(CHECKSUMS, SPEC, [DAY], expected, {(DAY, 0): figures(2, views=3, row_hash="11")})
    assert one[0].passed and two[0].passed
    assert (one[0].metadata["row_hash_sum"], two[0].metadata["row_hash_sum"]) == ("10", "11")


def test_a_bucket_with_sums_only_in_the_shadow_fails_against_zero() -> None:
    [verdict] = checksum_verdicts(CHECKSUMS, SPEC, [DAY], {}, {(DAY, 4): figures(1, views=1)})
    assert not verdict.passed
    assert failed_rows(verdict) == [[4, "views: shadow 1, events imply 0"]]


def test_a_bucket_only_in_the_shadow_with_zero_sums_passes_the_checksums() -> None:
    # The row count check is the one to refuse it: these sums reconcile.
    [verdict] = checksum_verdicts(CHECKSUMS, SPEC, [DAY], {}, {(DAY, 4): figures(1)})
    assert verdict.passed and verdict.metadata["buckets_checked"] == 1


# what every verdict carries


def test_a_verdict_carries_the_check_it_is_named_for_and_blocks() -> None:
    [rows] = row_count_verdicts("rows_again", [DAY], {(DAY, 0): figures(1)}, {(DAY, 0): figures(1)})
    [sums] = checksum_verdicts("sums_again", SPEC, [DAY], {(DAY, 0): figures(1)}, {(DAY, 0): figures(1)})
    assert (rows.check, rows.blocking, sums.check, sums.blocking) == ("rows_again", True, "sums_again", True)


def test_a_day_counts_every_failing_bucket_but_shows_only_the_first_few() -> None:
    expected = {(DAY, hour): figures(2) for hour in range(24)}
    actual = {(DAY, hour): figures(1) for hour in range(24)}
    [verdict] = row_count_verdicts(ROW_COUNTS, [DAY], expected, actual)
    assert verdict.metadata["buckets_failed"] == 24
    shown = failed_rows(verdict)
    assert len(shown) == SAMPLE_BUCKETS == 20
    assert shown[0] == [0, "1 rows, events imply 2"] and shown[-1][0] == 19
