"""What a run is told (`pipeline/run_settings.py`), read by `run_settings` alone from the run's tags and an
asset's config: the promotion policy (all-or-nothing unless told per day), the partitions before the range
each source stream takes care of (`partitions_before_tag` writes what the parser reads; the tag's old name
`source_days_before` is read for an alias period and reported deprecated), and the bound on divergence.
Every refusal names the tag or field and what it held; a setting given by tag and config with two values
is refused, naming both."""

import pytest
from dagster import AssetExecutionContext, DagsterInvalidConfigError, asset, materialize_to_memory
from pydantic import ValidationError

from backfill_platform.pipeline.run_settings import (
    MAX_DIVERGENCE_TAG,
    OLD_PARTITIONS_BEFORE_TAG,
    PARTITIONS_BEFORE_TAG,
    PROMOTION_POLICY_TAG,
    EventsConfig,
    ProductionConfig,
    PromotionPolicy,
    RunSettings,
    RunSettingsError,
    ShadowConfig,
    deprecations,
    partitions_before_tag,
    run_settings,
)

ALL, PER_DAY = PromotionPolicy.all_or_nothing, PromotionPolicy.per_day


def before(tags: dict[str, str], stream: str) -> int:
    return run_settings(tags).partitions_before_of(stream)


def test_a_run_told_nothing_has_the_defaults() -> None:
    told = run_settings({"dagster/backfill": "abc"})  # other tags say nothing of it
    assert told == RunSettings()
    assert (told.promotion_policy, told.per_partition, told.max_divergence_ratio) == (ALL, False, None)
    assert told.partitions_before == {} and told.partitions_before_of("impressions") == 0
    assert (
        run_settings({}, ShadowConfig()) == run_settings({}, EventsConfig(), "impressions") == RunSettings()
    )


# -- the promotion policy


def test_the_policy_is_all_or_nothing_unless_the_run_says_per_day() -> None:
    assert run_settings({PROMOTION_POLICY_TAG: "all_or_nothing"}).promotion_policy is ALL
    told = run_settings({PROMOTION_POLICY_TAG: "per_day"})
    assert (told.promotion_policy, told.per_partition) == (PER_DAY, True)
    assert run_settings({}, ProductionConfig(promotion_policy=PER_DAY)).per_partition


@pytest.mark.parametrize("value", ["per-day", "PER_DAY", " per_day", "", "none"])
def test_any_other_policy_tag_is_refused_naming_the_tag_and_the_value(value: str) -> None:
    with pytest.raises(RunSettingsError) as refused:
        run_settings({PROMOTION_POLICY_TAG: value})
    assert str(refused.value) == (
        f"run tag {PROMOTION_POLICY_TAG}={value!r} must be 'all_or_nothing' or 'per_day'"
    )


def test_a_policy_by_tag_and_config_is_taken_when_they_agree_and_refused_naming_both_when_not() -> None:
    tags = {PROMOTION_POLICY_TAG: "per_day"}
    assert run_settings(tags, ProductionConfig(promotion_policy=PER_DAY)).per_partition
    with pytest.raises(RunSettingsError) as refused:
        run_settings(tags, ProductionConfig(promotion_policy=ALL))
    assert str(refused.value) == (
        f"run tag {PROMOTION_POLICY_TAG} says 'per_day' and the asset's config says 'all_or_nothing': "
        "give one, or the same value in both"
    )


def test_a_config_policy_the_enum_does_not_hold_is_refused_by_the_model() -> None:
    with pytest.raises(ValidationError, match="promotion_policy"):
        ProductionConfig(promotion_policy="per-day")


# -- the partitions before the range


def test_the_tag_lists_the_streams_with_partitions_before_sorted_and_leaves_out_zero() -> None:
    assert partitions_before_tag({"weather": 1, "impressions": 2}) == "impressions=2,weather=1"
    assert partitions_before_tag({"weather": 0, "impressions": 3}) == "impressions=3"
    assert partitions_before_tag({"weather": 0}) == ""
    assert partitions_before_tag({}) == ""


def test_what_the_tag_writes_is_what_each_stream_reads_back() -> None:
    counts = {"impressions": 1, "weather": 7, "clicks": 0, "installs": 12}
    tags = {PARTITIONS_BEFORE_TAG: partitions_before_tag(counts)}
    assert {stream: before(tags, stream) for stream in counts} == counts
    assert run_settings(tags).partitions_before == {"impressions": 1, "weather": 7, "installs": 12}


def test_a_stream_the_tag_does_not_name_has_no_partitions_before() -> None:
    assert before({PARTITIONS_BEFORE_TAG: ""}, "impressions") == 0
    assert before({PARTITIONS_BEFORE_TAG: "weather=2"}, "impressions") == 0
    # A name is matched whole, not as a prefix or suffix.
    assert before({PARTITIONS_BEFORE_TAG: "impressions_v2=2"}, "impressions") == 0
    assert before({PARTITIONS_BEFORE_TAG: "impressions=2"}, "impressions_v2") == 0


def test_whitespace_and_empty_items_around_the_items_are_ignored() -> None:
    tags = {PARTITIONS_BEFORE_TAG: "  impressions=2 , weather =3,, "}
    assert run_settings(tags).partitions_before == {"impressions": 2, "weather": 3}
    assert before({PARTITIONS_BEFORE_TAG: " , "}, "weather") == 0
    assert before({PARTITIONS_BEFORE_TAG: "impressions= 2 "}, "impressions") == 2


@pytest.mark.parametrize(
    "text",
    ["impressions", "impressions=", "impressions=one", "impressions=-1", "=x", "=1", "impressions=²",
     "impressions=1=2"],
)  # fmt: skip
def test_a_malformed_item_is_refused_naming_the_tag_its_text_and_the_item(text: str) -> None:
    with pytest.raises(RunSettingsError) as refused:
        run_settings({PARTITIONS_BEFORE_TAG: text})
    assert str(refused.value) == (
        f"run tag {PARTITIONS_BEFORE_TAG}={text!r}: each item must be `<stream>=<partitions>`, e.g. "
        f"`impressions=1` (not {text!r})"
    )


def test_a_malformed_item_anywhere_is_refused_for_every_stream() -> None:
    # The whole tag is read whichever stream asks: a malformed tag is never half accepted.
    for text, item in (("weather=soon,impressions=1", "weather=soon"), ("impressions=1,garbage", "garbage")):
        for stream in ("weather", "impressions", "clicks"):
            with pytest.raises(RunSettingsError, match=f"not '{item}'"):
                run_settings({PARTITIONS_BEFORE_TAG: text}, EventsConfig(), stream)


def test_a_stream_named_twice_with_two_counts_is_refused() -> None:
    assert before({PARTITIONS_BEFORE_TAG: "weather=1,weather=1"}, "weather") == 1
    with pytest.raises(RunSettingsError) as refused:
        run_settings({PARTITIONS_BEFORE_TAG: "weather=1,weather=2"})
    assert (
        str(refused.value) == f"run tag {PARTITIONS_BEFORE_TAG}='weather=1,weather=2' names 'weather' twice"
    )


def test_the_tag_is_never_written_with_what_the_reader_refuses() -> None:
    with pytest.raises(RunSettingsError, match=r"cannot be negative: \{'impressions': -1\}"):
        partitions_before_tag({"impressions": -1})


def test_an_events_assets_config_sets_its_own_streams_count_beside_the_tags() -> None:
    tags = {PARTITIONS_BEFORE_TAG: "weather=2"}
    told = run_settings(tags, EventsConfig(partitions_before=1), "impressions")
    assert told.partitions_before == {"weather": 2, "impressions": 1}
    # The same count both ways is one setting; a config without a stream sets nothing.
    agreed = run_settings(
        {PARTITIONS_BEFORE_TAG: "impressions=1"}, EventsConfig(partitions_before=1), "impressions"
    )
    assert agreed.partitions_before == {"impressions": 1}
    assert run_settings(tags, EventsConfig(partitions_before=1)).partitions_before == {"weather": 2}


def test_a_count_by_tag_and_config_that_differ_is_refused_naming_both() -> None:
    with pytest.raises(RunSettingsError) as refused:
        run_settings(
            {PARTITIONS_BEFORE_TAG: "impressions=2"}, EventsConfig(partitions_before=1), "impressions"
        )
    assert str(refused.value) == (
        f"run tag {PARTITIONS_BEFORE_TAG} (impressions) says 2 and the asset's config says 1: "
        "give one, or the same value in both"
    )


def test_a_negative_count_in_config_or_the_model_is_refused() -> None:
    with pytest.raises(ValidationError, match="partitions_before"):
        EventsConfig(partitions_before=-1)
    with pytest.raises(ValidationError, match="partitions_before"):
        RunSettings(partitions_before={"impressions": -1})


# -- the tag's old name, for an alias period


def test_the_old_tag_name_is_still_read_and_reported_deprecated() -> None:
    old = {OLD_PARTITIONS_BEFORE_TAG: "impressions=1"}
    assert run_settings(old).partitions_before == {"impressions": 1}
    assert deprecations(old) == [
        f"run tag {OLD_PARTITIONS_BEFORE_TAG} is deprecated: it counts partitions of the stream's grain "
        f"(hours too), name it {PARTITIONS_BEFORE_TAG}; the old name is read for an alias period"
    ]
    assert deprecations({PARTITIONS_BEFORE_TAG: "impressions=1"}) == []


def test_the_old_name_is_read_as_strictly_as_the_new() -> None:
    with pytest.raises(RunSettingsError, match=f"run tag {OLD_PARTITIONS_BEFORE_TAG}='impressions=one'"):
        run_settings({OLD_PARTITIONS_BEFORE_TAG: "impressions=one"})


def test_both_names_are_taken_when_they_agree_and_refused_naming_both_when_not() -> None:
    same = {PARTITIONS_BEFORE_TAG: "impressions=1", OLD_PARTITIONS_BEFORE_TAG: " impressions = 1 "}
    assert run_settings(same).partitions_before == {"impressions": 1}
    with pytest.raises(RunSettingsError) as refused:
        run_settings({PARTITIONS_BEFORE_TAG: "impressions=1", OLD_PARTITIONS_BEFORE_TAG: "impressions=2"})
    assert str(refused.value) == (
        f"run tags {PARTITIONS_BEFORE_TAG}='impressions=1' and {OLD_PARTITIONS_BEFORE_TAG}='impressions=2' "
        "(its old name) differ: give one"
    )
    # The old name against an events asset's config is refused naming the tag, as the new one is.
    with pytest.raises(
        RunSettingsError, match=f"run tag {OLD_PARTITIONS_BEFORE_TAG} \\(impressions\\) says 2 and"
    ):
        run_settings(
            {OLD_PARTITIONS_BEFORE_TAG: "impressions=2"}, EventsConfig(partitions_before=1), "impressions"
        )


# -- the bound on divergence


@pytest.mark.parametrize(("text", "bound"), [("0", 0.0), ("0.05", 0.05), ("1", 1.0), (" 0.5 ", 0.5)])
def test_a_divergence_bound_is_a_ratio_between_0_and_1(text: str, bound: float) -> None:
    assert run_settings({MAX_DIVERGENCE_TAG: text}).max_divergence_ratio == bound
    assert run_settings({}, ShadowConfig(max_divergence_ratio=bound)).max_divergence_ratio == bound


@pytest.mark.parametrize("text", ["1.5", "-0.1", "five percent", "", "nan", "5%"])
def test_any_other_divergence_tag_is_refused_naming_the_tag_and_the_value(text: str) -> None:
    with pytest.raises(RunSettingsError) as refused:
        run_settings({MAX_DIVERGENCE_TAG: text})
    assert str(refused.value) == (
        f"run tag {MAX_DIVERGENCE_TAG}={text!r} must be a ratio between 0 and 1, e.g. 0.05"
    )


def test_a_bound_by_tag_and_config_is_taken_when_they_agree_and_refused_naming_both_when_not() -> None:
    tags = {MAX_DIVERGENCE_TAG: "0.05"}
    assert run_settings(tags, ShadowConfig(max_divergence_ratio=0.05)).max_divergence_ratio == 0.05
    with pytest.raises(RunSettingsError) as refused:
        run_settings(tags, ShadowConfig(max_divergence_ratio=0.1))
    assert str(refused.value) == (
        f"run tag {MAX_DIVERGENCE_TAG} says 0.05 and the asset's config says 0.1: give one, or the same "
        "value in both"
    )


@pytest.mark.parametrize("ratio", [-0.01, 1.01])
def test_a_config_bound_outside_0_to_1_is_refused_by_the_model(ratio: float) -> None:
    with pytest.raises(ValidationError, match="max_divergence_ratio"):
        ShadowConfig(max_divergence_ratio=ratio)


# -- what Dagster makes of the configs


SEEN: list[RunSettings] = []


@asset
def events(context: AssetExecutionContext, config: EventsConfig) -> None:
    """An asset whose config is the events assets' (module level: Dagster resolves its annotations)."""
    SEEN.append(run_settings(context.run.tags, config, "impressions"))


def test_dagster_reads_the_settings_from_run_config_with_the_policys_values_as_its_words() -> None:
    """The configs through Dagster's own config system: an asset given run config reads the typed values,
    and a value outside the enum or a count that is no number is refused by Dagster, naming the field."""
    SEEN.clear()
    ops = {"events": {"config": {"promotion_policy": "per_day", "partitions_before": 2}}}
    assert materialize_to_memory([events], run_config={"ops": ops}).success
    read = SEEN
    assert read == [RunSettings(promotion_policy=PER_DAY, partitions_before={"impressions": 2})]
    wrong_values = (
        ({"promotion_policy": "per-day"}, "promotion_policy"),
        ({"partitions_before": "x"}, "partitions_before"),
    )
    for wrong, field in wrong_values:
        with pytest.raises(DagsterInvalidConfigError, match=field):
            materialize_to_memory([events], run_config={"ops": {"events": {"config": wrong}}})
