"""Bucket figures compared and summed without Spark (`validation.buckets`): every bucket either side has
is judged, a missing side counting as an empty bucket (`failing_buckets`); a day's failing buckets are
shown by hour, or as the whole day, up to a limit (`failing_bucket_rows`); null keys are counted per key
column over every bucket (`null_keys_of`). The figures' own aggregation over a
table (`actual_figures`, `events_values`) runs in Spark and is left to the integration tests."""

from __future__ import annotations

from backfill_platform.components.registry import demo_spec_data
from backfill_platform.pipeline.validation.buckets import (
    BucketFigures,
    failing_bucket_rows,
    failing_buckets,
    null_keys_of,
)
from backfill_platform.specs.dataset import DatasetSpec

SPEC = DatasetSpec.model_validate(demo_spec_data("views_per_title"))  # keys: event_date, event_hour, title_id
DAY, OTHER = "2026-10-01", "2026-10-02"


def rows_differ(want: BucketFigures, got: BucketFigures) -> str | None:
    return f"{got.rows} != {want.rows}" if got.rows != want.rows else None


# failing_buckets


def test_buckets_alike_on_both_sides_do_not_fail_but_are_all_checked() -> None:
    same = {(DAY, 0): BucketFigures(rows=3), (DAY, 1): BucketFigures(rows=4)}
    buckets, bad = failing_buckets(same, dict(same), rows_differ)
    assert buckets == {(DAY, 0), (DAY, 1)}
    assert bad == {}


def test_a_bucket_present_on_one_side_only_is_judged_against_an_empty_one() -> None:
    expected = {(DAY, 0): BucketFigures(rows=3), (DAY, 2): BucketFigures(rows=5)}
    actual = {(DAY, 0): BucketFigures(rows=3), (DAY, 9): BucketFigures(rows=2)}
    seen: list[tuple[BucketFigures, BucketFigures]] = []

    def problem(want: BucketFigures, got: BucketFigures) -> str | None:
        seen.append((want, got))
        return rows_differ(want, got)

    buckets, bad = failing_buckets(expected, actual, problem)
    assert buckets == {(DAY, 0), (DAY, 2), (DAY, 9)}
    assert bad == {(DAY, 2): "0 != 5", (DAY, 9): "2 != 0"}
    assert (BucketFigures(), BucketFigures(rows=2)) in seen  # only in actual: nothing expected
    assert (BucketFigures(rows=5), BucketFigures()) in seen  # only expected: nothing found


def test_failing_buckets_come_in_day_then_hour_order_the_whole_day_first() -> None:
    expected = {
        (OTHER, 3): BucketFigures(rows=1),
        (DAY, 10): BucketFigures(rows=1),
        (DAY, 2): BucketFigures(rows=1),
    }
    expected[(DAY, None)] = BucketFigures(rows=1)
    _, bad = failing_buckets(expected, {}, rows_differ)
    assert list(bad) == [(DAY, None), (DAY, 2), (DAY, 10), (OTHER, 3)]


def test_no_buckets_on_either_side_nothing_checked_nothing_failed() -> None:
    assert failing_buckets({}, {}, rows_differ) == (set(), {})


def test_zero_rows_on_both_sides_is_no_difference() -> None:
    buckets, bad = failing_buckets({(DAY, 0): BucketFigures()}, {}, rows_differ)
    assert buckets == {(DAY, 0)} and bad == {}


# failing_bucket_rows


def test_failing_hours_are_shown_by_hour() -> None:
    header, rows = failing_bucket_rows({(DAY, 3): "too few", (DAY, 14): "too many"}, "problem", 20)
    assert header == ["hour", "problem"]
    assert rows == [[3, "too few"], [14, "too many"]]


def test_only_the_first_failing_buckets_up_to_the_limit_are_shown() -> None:
    bad = {(DAY, hour): f"wrong {hour}" for hour in range(24)}
    header, rows = failing_bucket_rows(bad, "difference", 2)
    assert header == ["hour", "difference"]
    assert rows == [[0, "wrong 0"], [1, "wrong 1"]]


def test_a_whole_day_or_hour_bucket_is_named_so() -> None:
    header, rows = failing_bucket_rows({(DAY, None): "off by one"}, "problem", 20)
    assert header == ["bucket", "problem"]
    assert rows == [["whole day", "off by one"]]
    # An hourly dataset's partition is its own bucket.
    _, rows = failing_bucket_rows({("2026-10-01-14:00", None): "off by one"}, "problem", 20)
    assert rows == [["whole hour", "off by one"]]


def test_no_failing_bucket_shows_no_rows() -> None:
    assert failing_bucket_rows({}, "problem", 20) == (["hour", "problem"], [])


# null_keys_of


def test_null_keys_are_counted_per_key_column_over_every_bucket() -> None:
    figures = {
        (DAY, 0): BucketFigures(null_keys={"title_id": 2, "event_hour": 0}),
        (DAY, 1): BucketFigures(null_keys={"title_id": 1}),
        (OTHER, 0): BucketFigures(null_keys={"title_id": 4, "event_date": 1, "views": 9}),  # views: no key
    }
    assert null_keys_of(figures, SPEC) == {"event_date": 1, "event_hour": 0, "title_id": 7}


def test_no_buckets_or_no_null_counts_are_zero_null_keys() -> None:
    zero = {"event_date": 0, "event_hour": 0, "title_id": 0}
    assert null_keys_of({}, SPEC) == zero
    assert null_keys_of({(DAY, 0): BucketFigures(rows=3)}, SPEC) == zero
