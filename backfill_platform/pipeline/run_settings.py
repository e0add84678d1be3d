"""What a run is told: its promotion policy, the partitions before its range each source stream takes care
of, and the bound on a shadow's divergence from production: `RunSettings`, built by `run_settings` alone.

A run is told through its tags (what asset backfills from the UI, the CLI and GraphQL carry) or through
the config of its assets (`EventsConfig`, `ShadowConfig`, `ProductionConfig`: the fields the launchpad and
"Materialize…" show, with their descriptions). A setting given both ways with two values is refused, naming
both; one given neither way has its default. A tag given a value the setting cannot take is refused,
naming the tag and what it holds. The tag `backfill_platform/source_days_before` is the old name of
`backfill_platform/partitions_before` (it always counted partitions of the stream's grain, hours too): still
read for an alias period, with a deprecation warning in the run's log.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum, StrEnum
from typing import TypeVar

from dagster import AssetExecutionContext, Config
from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt


class PromotionPolicy(StrEnum):
    """What one failed partition holds back. The members are named as their values: Dagster's launchpad
    offers an enum's member names, and the same words then serve as tag values and config values."""

    all_or_nothing = "all_or_nothing"  # one failed partition holds back the whole range (the default)
    per_day = "per_day"  # the partitions that passed are promoted, the failed ones held back


PROMOTION_POLICY_TAG = "backfill_platform/promotion_policy"
PARTITIONS_BEFORE_TAG = "backfill_platform/partitions_before"
# Its old name, read for an alias period (README, "Renamed, with an alias period"); never written any more.
OLD_PARTITIONS_BEFORE_TAG = "backfill_platform/source_days_before"
MAX_DIVERGENCE_TAG = "backfill_platform/max_divergence_ratio"

# What each setting means (the model's descriptions), and how an asset's config field is told it (the
# launchpad's descriptions: the meaning, then where else it comes from).
POLICY_MEANS = (
    "What one failed partition holds back: all_or_nothing (the whole range, the default) or per_day (only "
    "itself: the partitions that passed are promoted in one commit)."
)
PARTITIONS_BEFORE_MEANS = (
    "How many partitions of the stream's grain (days or hours) before the range its events step ingests "
    "too, or validates as already ingested and unchanged: a dataset's lookback reads them."
)
DIVERGENCE_MEANS = (
    "Block promotion of partitions whose divergence from production exceeds this share of rows (0 to 1); "
    "without a bound, divergence only warns."
)
POLICY_DESCRIPTION = (
    f"{POLICY_MEANS} Unset: the run tag `{PROMOTION_POLICY_TAG}` decides; both set to different values are "
    "refused. Set it on every asset of the run, or use the tag: an asset's config is that asset's alone."
)
PARTITIONS_BEFORE_DESCRIPTION = (
    f"{PARTITIONS_BEFORE_MEANS} Unset: the run tag `{PARTITIONS_BEFORE_TAG}` (`impressions=1,weather=2`) "
    "decides, else 0; both set to different values are refused."
)
DIVERGENCE_DESCRIPTION = (
    f"{DIVERGENCE_MEANS} Unset: the run tag `{MAX_DIVERGENCE_TAG}` decides; both set to different values "
    "are refused."
)


class RunSettings(BaseModel):
    """What a run is told, typed and checked: every stage reads this, never a raw tag."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    promotion_policy: PromotionPolicy = Field(
        default=PromotionPolicy.all_or_nothing, description=POLICY_MEANS
    )
    partitions_before: dict[str, NonNegativeInt] = Field(
        default_factory=dict, description=f"Per source stream, by name: {PARTITIONS_BEFORE_MEANS}"
    )
    max_divergence_ratio: float | None = Field(default=None, ge=0, le=1, description=DIVERGENCE_MEANS)

    @property
    def per_partition(self) -> bool:
        """Whether a failed partition holds back only itself (policy `per_day`)."""
        return self.promotion_policy is PromotionPolicy.per_day

    def partitions_before_of(self, stream: str) -> int:
        """How many partitions before the range `stream`'s events step takes care of (0: none)."""
        return self.partitions_before.get(stream, 0)


class _PolicyConfig(Config):
    promotion_policy: PromotionPolicy | None = Field(default=None, description=POLICY_DESCRIPTION)


class EventsConfig(_PolicyConfig):
    """An events asset's settings in the launchpad: the policy, and its stream's partitions before."""

    partitions_before: int | None = Field(default=None, ge=0, description=PARTITIONS_BEFORE_DESCRIPTION)


class ShadowConfig(_PolicyConfig):
    """A shadow asset's settings in the launchpad: the policy, and the bound on divergence."""

    max_divergence_ratio: float | None = Field(default=None, ge=0, le=1, description=DIVERGENCE_DESCRIPTION)


class ProductionConfig(_PolicyConfig):
    """A production asset's settings in the launchpad: the policy."""


class RunSettingsError(ValueError):
    """A run told something it cannot do: a tag's value refused, or a tag and a config that disagree."""


def run_settings(
    tags: Mapping[str, str], config: Config | None = None, stream: str | None = None
) -> RunSettings:
    """The settings of a run told by `tags` and, for one asset, by its `config` (`stream`: the stream of
    an events asset, whose `partitions_before` it sets). Refuses, naming the tag or field and its value, a
    value a setting cannot take and a setting given twice with two values."""
    policy = _merged(_policy_of_tag(tags), getattr(config, "promotion_policy", None), PROMOTION_POLICY_TAG)
    before = _partitions_before_of_tags(tags)
    given = getattr(config, "partitions_before", None)
    if stream is not None and given is not None:
        # Named as the run gave it: the old name when the run gave only that one.
        old_only = OLD_PARTITIONS_BEFORE_TAG in tags and PARTITIONS_BEFORE_TAG not in tags
        tag = OLD_PARTITIONS_BEFORE_TAG if old_only else PARTITIONS_BEFORE_TAG
        before[stream] = _merged(before.get(stream), given, f"{tag} ({stream})")
    ratio = _merged(_ratio_of_tag(tags), getattr(config, "max_divergence_ratio", None), MAX_DIVERGENCE_TAG)
    return RunSettings(
        promotion_policy=policy or PromotionPolicy.all_or_nothing,
        partitions_before=before,
        max_divergence_ratio=ratio,
    )


def step_settings(
    context: AssetExecutionContext, config: Config | None = None, stream: str | None = None
) -> RunSettings:
    """`run_settings` of the step's run and config; a tag read under its old name is logged as deprecated."""
    for warning in deprecations(context.run.tags):
        context.log.warning(warning)
    return run_settings(context.run.tags, config, stream)


def deprecations(tags: Mapping[str, str]) -> list[str]:
    """What the run's tags say under an old name, each with the name to use instead."""
    if OLD_PARTITIONS_BEFORE_TAG not in tags:
        return []
    return [
        f"run tag {OLD_PARTITIONS_BEFORE_TAG} is deprecated: it counts partitions of the stream's grain "
        f"(hours too), name it {PARTITIONS_BEFORE_TAG}; the old name is read for an alias period"
    ]


def partitions_before_tag(partitions_before: Mapping[str, int]) -> str:
    """The text of the tag `PARTITIONS_BEFORE_TAG` for `partitions_before` (stream -> partitions): streams
    with none are left out."""
    negative = {stream: count for stream, count in partitions_before.items() if count < 0}
    if negative:
        raise RunSettingsError(f"partitions before a range cannot be negative: {negative}")
    return ",".join(f"{stream}={count}" for stream, count in sorted(partitions_before.items()) if count)


T = TypeVar("T")


def _merged(tag_value: T | None, config_value: T | None, tag: str) -> T | None:
    """The one value a setting was given, by tag or config; two different ones are refused."""
    if tag_value is not None and config_value is not None and tag_value != config_value:
        raise RunSettingsError(
            f"run tag {tag} says {_shown(tag_value)} and the asset's config says {_shown(config_value)}: "
            "give one, or the same value in both"
        )
    return config_value if config_value is not None else tag_value


def _shown(value: object) -> str:
    return repr(value.value if isinstance(value, Enum) else value)


def _policy_of_tag(tags: Mapping[str, str]) -> PromotionPolicy | None:
    if PROMOTION_POLICY_TAG not in tags:
        return None
    text = tags[PROMOTION_POLICY_TAG]
    try:
        return PromotionPolicy(text)
    except ValueError:
        allowed = " or ".join(repr(policy.value) for policy in PromotionPolicy)
        raise RunSettingsError(f"run tag {PROMOTION_POLICY_TAG}={text!r} must be {allowed}") from None


def _partitions_before_of_tags(tags: Mapping[str, str]) -> dict[str, int]:
    """Both names of the tag read whole; given both, they must say the same."""
    new = _parse_partitions_before(tags, PARTITIONS_BEFORE_TAG)
    old = _parse_partitions_before(tags, OLD_PARTITIONS_BEFORE_TAG)
    if new is not None and old is not None and new != old:
        raise RunSettingsError(
            f"run tags {PARTITIONS_BEFORE_TAG}={tags[PARTITIONS_BEFORE_TAG]!r} and "
            f"{OLD_PARTITIONS_BEFORE_TAG}={tags[OLD_PARTITIONS_BEFORE_TAG]!r} (its old name) differ: give one"
        )
    return dict(new if new is not None else old or {})


def _parse_partitions_before(tags: Mapping[str, str], tag: str) -> dict[str, int] | None:
    """Every stream the tag names, with its partitions before the range (None: no such tag). The whole
    tag is read, so a malformed item is refused whichever stream asks; whitespace around names, numbers
    and items is ignored."""
    if tag not in tags:
        return None
    text = tags[tag].strip()
    parsed: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, equals, count = (part.strip() for part in item.partition("="))
        # ASCII digits only: `str.isdigit` also takes `²`, which `int` then refuses without naming the tag.
        if not (name and equals and count.isascii() and count.isdigit()):
            raise RunSettingsError(
                f"run tag {tag}={text!r}: each item must be `<stream>=<partitions>`, e.g. "
                f"`impressions=1` (not {item!r})"
            )
        if name in parsed and parsed[name] != int(count):
            raise RunSettingsError(f"run tag {tag}={text!r} names {name!r} twice")
        parsed[name] = int(count)
    return parsed


def _ratio_of_tag(tags: Mapping[str, str]) -> float | None:
    if MAX_DIVERGENCE_TAG not in tags:
        return None
    text = tags[MAX_DIVERGENCE_TAG]
    try:
        bound = float(text)
    except ValueError:
        bound = -1.0
    # `not 0 <= bound <= 1` also refuses nan, which compares false with everything.
    if not 0 <= bound <= 1:
        raise RunSettingsError(
            f"run tag {MAX_DIVERGENCE_TAG}={text!r} must be a ratio between 0 and 1, e.g. 0.05"
        )
    return bound
