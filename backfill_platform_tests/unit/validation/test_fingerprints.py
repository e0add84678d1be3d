"""How a fingerprint (row count and exact row-hash sum, `pipeline/validation/fingerprints.py`) is shown and
recorded: as Dagster metadata, as the ledger columns of a prefix, read back from a ledger row (None for a
row from before that prefix was recorded); fingerprints of disjoint row sets add up exactly, however
far the sum outgrows 64 bits; collected counts and sums become each partition's fingerprint
(`from_sums`), and a partition's is the exact sum of its buckets', a partition without buckets
`Fingerprint.EMPTY` (`fingerprints_from_buckets`). The Spark aggregations are left to the integration tests."""

from __future__ import annotations

from backfill_platform.pipeline.validation.buckets import BucketFigures
from backfill_platform.pipeline.validation.fingerprints import (
    Fingerprint,
    fingerprint_sum,
    fingerprints_from_buckets,
    from_sums,
)

BIG = 2**63 - 1  # the largest xxhash64 value
LOW = -(2**63)  # the smallest
DAY, OTHER = "2026-10-01", "2026-10-02"


def test_metadata_shows_the_rows_and_the_hash_sum() -> None:
    assert Fingerprint(3, "-12345").metadata() == {"rows": 3, "row_hash_sum": "-12345"}
    assert Fingerprint.EMPTY.metadata() == {"rows": 0, "row_hash_sum": "0"}


def test_columns_are_named_by_the_prefix() -> None:
    assert Fingerprint(3, "42").columns("shadow") == {"shadow_rows": 3, "shadow_row_hash": "42"}
    assert Fingerprint(3, "42").columns("production") == {"production_rows": 3, "production_row_hash": "42"}


def test_what_columns_records_is_what_recorded_reads_back() -> None:
    fingerprint = Fingerprint(7, str(BIG * 5))
    row = {"day": "2026-10-01", **fingerprint.columns("shadow"), **Fingerprint(1, "1").columns("production")}
    assert Fingerprint.recorded(row, "shadow") == fingerprint
    assert Fingerprint.recorded(row, "production") == Fingerprint(1, "1")


def test_an_empty_fingerprint_recorded_is_read_back_not_taken_for_a_missing_one() -> None:
    assert Fingerprint.recorded(Fingerprint.EMPTY.columns("shadow"), "shadow") == Fingerprint.EMPTY


def test_a_row_from_before_the_prefix_was_recorded_has_no_fingerprint() -> None:
    assert Fingerprint.recorded({}, "shadow") is None
    assert Fingerprint.recorded({"day": "2026-10-01"}, "shadow") is None
    assert Fingerprint.recorded({"shadow_rows": None, "shadow_row_hash": None}, "shadow") is None
    # Half a fingerprint is none either.
    assert Fingerprint.recorded({"shadow_rows": 3, "shadow_row_hash": None}, "shadow") is None
    assert Fingerprint.recorded({"shadow_rows": None, "shadow_row_hash": "42"}, "shadow") is None
    assert Fingerprint.recorded({"shadow_rows": 3}, "shadow") is None
    # Another prefix's columns are not this one's.
    assert Fingerprint.recorded(Fingerprint(3, "42").columns("production"), "shadow") is None


def test_the_sum_of_fingerprints_adds_rows_and_hash_sums() -> None:
    assert fingerprint_sum([Fingerprint(2, "10"), Fingerprint(3, "-4"), Fingerprint(0, "0")]) == Fingerprint(
        5, "6"
    )
    assert fingerprint_sum(iter([Fingerprint(1, "7")])) == Fingerprint(1, "7")


def test_the_sum_of_no_fingerprints_is_the_empty_one() -> None:
    assert fingerprint_sum([]) == Fingerprint.EMPTY
    assert fingerprint_sum([Fingerprint.EMPTY, Fingerprint.EMPTY]) == Fingerprint.EMPTY


def test_the_sum_is_exact_beyond_64_bits_and_beyond_a_float() -> None:
    # Each day's sum is already past 64 bits (a decimal(38,0) from Spark); a range adds them up.
    day = str(BIG * 1000 + 1)
    total = fingerprint_sum([Fingerprint(1000, day)] * 365)
    assert total == Fingerprint(365_000, str((BIG * 1000 + 1) * 365))
    assert int(total.row_hash) > 2**64
    assert total.row_hash.endswith("365")  # no digit lost to a float's 53 bits
    # Sums of opposite sign cancel exactly.
    assert fingerprint_sum([Fingerprint(2, str(BIG * 2)), Fingerprint(2, str(LOW * 2))]) == Fingerprint(
        4, "-2"
    )
    big = "9" * 38
    assert fingerprint_sum([Fingerprint(1, big), Fingerprint(1, "1")]) == Fingerprint(2, "1" + "0" * 38)


# from_sums


def test_collected_counts_and_sums_become_each_partition_s_fingerprint() -> None:
    rows = {DAY: 3, OTHER: 1}
    hashes = {DAY: BIG * 3, OTHER: -7}
    assert from_sums(rows, hashes, [DAY, OTHER]) == {
        DAY: Fingerprint(3, str(BIG * 3)),
        OTHER: Fingerprint(1, "-7"),
    }


def test_a_partition_without_a_count_is_empty_and_one_without_a_hash_sum_sums_to_zero() -> None:
    assert from_sums({DAY: 2}, {}, [DAY, OTHER]) == {DAY: Fingerprint(2, "0"), OTHER: Fingerprint.EMPTY}
    # Only the partitions asked for, in their order.
    assert list(from_sums({DAY: 1, OTHER: 1}, {DAY: 1, OTHER: 1}, [OTHER])) == [OTHER]


# fingerprints_from_buckets


def test_a_day_s_fingerprint_is_the_exact_sum_of_its_buckets() -> None:
    figures = {
        (DAY, 0): BucketFigures(rows=2, row_hash="18446744073709551615"),  # 2^64 - 1
        (DAY, 1): BucketFigures(rows=3, row_hash="-5"),
        (OTHER, 0): BucketFigures(rows=1, row_hash="7"),
    }
    assert fingerprints_from_buckets(figures, [DAY, OTHER]) == {
        DAY: Fingerprint(5, "18446744073709551610"),
        OTHER: Fingerprint(1, "7"),
    }


def test_a_day_without_buckets_is_empty_and_days_not_asked_for_are_left_out() -> None:
    figures = {(OTHER, 0): BucketFigures(rows=1, row_hash="7")}
    assert fingerprints_from_buckets(figures, [DAY]) == {DAY: Fingerprint.EMPTY}
    assert fingerprints_from_buckets({}, [DAY, OTHER]) == {DAY: Fingerprint.EMPTY, OTHER: Fingerprint.EMPTY}


def test_equal_row_counts_with_other_hash_sums_are_other_fingerprints() -> None:
    one = fingerprints_from_buckets({(DAY, 0): BucketFigures(rows=2, row_hash="10")}, [DAY])
    two = fingerprints_from_buckets({(DAY, 0): BucketFigures(rows=2, row_hash="11")}, [DAY])
    assert one[DAY].rows == two[DAY].rows == 2
    assert one != two


def test_hash_sums_cancelling_out_keep_the_rows_so_the_day_is_not_empty() -> None:
    figures = {(DAY, 0): BucketFigures(rows=1, row_hash="5"), (DAY, 1): BucketFigures(rows=1, row_hash="-5")}
    assert fingerprints_from_buckets(figures, [DAY]) == {DAY: Fingerprint(2, "0")}
    assert fingerprints_from_buckets(figures, [DAY])[DAY] != Fingerprint.EMPTY


def test_as_text_a_fingerprint_reads_back_exactly() -> None:
    fingerprint = Fingerprint(1200, str(LOW * 3))
    assert fingerprint.text() == f"1200/{LOW * 3}"
    assert Fingerprint.parse(fingerprint.text()) == fingerprint
    assert Fingerprint.parse(Fingerprint.EMPTY.text()) == Fingerprint.EMPTY
