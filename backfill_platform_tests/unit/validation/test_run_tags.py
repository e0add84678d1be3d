"""What a run's tags decide (`pipeline/run_tags.py`): the promotion policy (all-or-nothing unless the run
says per day; any other value is refused, naming the tag and the value), and how many days before its
range each source stream's events step takes care of (`source_days_before_tag` writes what
`source_days_before` reads: a stream left out, or given 0 days, has none; a malformed item is refused)."""

from __future__ import annotations

import pytest

from backfill_platform.pipeline.run_tags import (
    ALL_OR_NOTHING,
    PER_DAY,
    PROMOTION_POLICY_TAG,
    SOURCE_DAYS_BEFORE_TAG,
    promotion_policy,
    source_days_before,
    source_days_before_tag,
)


def test_promotion_policy_is_all_or_nothing_unless_the_run_says_otherwise() -> None:
    assert promotion_policy({}) == ALL_OR_NOTHING
    assert promotion_policy({"dagster/backfill": "abc"}) == ALL_OR_NOTHING  # other tags say nothing of it
    assert promotion_policy({PROMOTION_POLICY_TAG: ALL_OR_NOTHING}) == ALL_OR_NOTHING
    assert promotion_policy({PROMOTION_POLICY_TAG: PER_DAY}) == PER_DAY


@pytest.mark.parametrize("value", ["per-day", "PER_DAY", " per_day", "", "none"])
def test_any_other_promotion_policy_is_refused_naming_the_tag_and_the_value(value: str) -> None:
    with pytest.raises(ValueError) as refused:
        promotion_policy({PROMOTION_POLICY_TAG: value})
    message = str(refused.value)
    assert PROMOTION_POLICY_TAG in message
    assert repr(value) in message
    assert ALL_OR_NOTHING in message and PER_DAY in message  # and what it may be


def test_the_tag_lists_the_streams_with_days_before_sorted_and_leaves_out_zero() -> None:
    assert source_days_before_tag({"weather": 1, "impressions": 2}) == "impressions=2,weather=1"
    assert source_days_before_tag({"weather": 0, "impressions": 3}) == "impressions=3"
    assert source_days_before_tag({"weather": 0}) == ""
    assert source_days_before_tag({}) == ""


def test_what_the_tag_writes_is_what_each_stream_reads_back() -> None:
    counts = {"impressions": 1, "weather": 7, "clicks": 0, "installs": 12}
    tags = {SOURCE_DAYS_BEFORE_TAG: source_days_before_tag(counts)}
    assert {stream: source_days_before(tags, stream) for stream in counts} == counts


def test_a_stream_the_tag_does_not_name_has_no_days_before() -> None:
    assert source_days_before({}, "impressions") == 0
    assert source_days_before({SOURCE_DAYS_BEFORE_TAG: ""}, "impressions") == 0
    assert source_days_before({SOURCE_DAYS_BEFORE_TAG: "weather=2"}, "impressions") == 0
    # A name is matched whole, not as a prefix or suffix.
    assert source_days_before({SOURCE_DAYS_BEFORE_TAG: "impressions_v2=2"}, "impressions") == 0
    assert source_days_before({SOURCE_DAYS_BEFORE_TAG: "impressions=2"}, "impressions_v2") == 0


def test_whitespace_and_empty_items_around_the_items_are_ignored() -> None:
    tags = {SOURCE_DAYS_BEFORE_TAG: "  impressions=2 , weather =3,, "}
    assert source_days_before(tags, "impressions") == 2
    assert source_days_before(tags, "weather") == 3
    assert source_days_before({SOURCE_DAYS_BEFORE_TAG: " , "}, "weather") == 0


@pytest.mark.parametrize("text", ["impressions", "impressions=", "impressions=one", "impressions=-1", "=x"])
def test_a_malformed_item_is_refused_naming_the_tag_and_its_text(text: str) -> None:
    with pytest.raises(ValueError) as refused:
        source_days_before({SOURCE_DAYS_BEFORE_TAG: text}, "impressions")
    message = str(refused.value)
    assert SOURCE_DAYS_BEFORE_TAG in message
    assert repr(text) in message
    assert "<stream>=<days>" in message


def test_a_malformed_item_before_the_stream_is_refused_for_every_stream() -> None:
    tags = {SOURCE_DAYS_BEFORE_TAG: "weather=soon,impressions=1"}
    for stream in ("weather", "impressions", "clicks"):
        with pytest.raises(ValueError, match=SOURCE_DAYS_BEFORE_TAG):
            source_days_before(tags, stream)


def test_a_malformed_item_after_the_stream_is_refused_for_every_stream_too() -> None:
    # The whole tag is read whichever stream asks: a malformed tag is never half accepted.
    tags = {SOURCE_DAYS_BEFORE_TAG: "impressions=1,garbage"}
    for stream in ("impressions", "weather"):
        with pytest.raises(ValueError, match="not 'garbage'"):
            source_days_before(tags, stream)


@pytest.mark.parametrize("text", ["=1", "impressions=²", "impressions=1=2", "impressions=x"])
def test_an_item_without_a_name_or_with_other_digits_is_refused_naming_the_tag(text: str) -> None:
    with pytest.raises(ValueError) as refused:
        source_days_before({SOURCE_DAYS_BEFORE_TAG: text}, "impressions")
    assert SOURCE_DAYS_BEFORE_TAG in str(refused.value)


def test_whitespace_around_the_days_is_ignored_as_around_the_name() -> None:
    assert source_days_before({SOURCE_DAYS_BEFORE_TAG: "impressions= 2 "}, "impressions") == 2


def test_a_stream_named_twice_with_two_counts_is_refused() -> None:
    assert source_days_before({SOURCE_DAYS_BEFORE_TAG: "weather=1,weather=1"}, "weather") == 1
    with pytest.raises(ValueError, match="names 'weather' twice"):
        source_days_before({SOURCE_DAYS_BEFORE_TAG: "weather=1,weather=2"}, "weather")


def test_the_tag_is_never_written_with_what_the_reader_refuses() -> None:
    with pytest.raises(ValueError, match="negative"):
        source_days_before_tag({"impressions": -1})
