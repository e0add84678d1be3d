"""Pure verdicts over a divergence from production (`validation/divergence_verdicts.py`): within a
launched bound a day passes and above it blocks, the ratio counting every kind of difference against the
larger side; without a bound divergence is a warning and a first promotion into an empty production is
none; each day shows its own differing rows, or why there are none."""

from __future__ import annotations

import pytest
from dagster import MetadataValue

from backfill_platform.pipeline.shadow.checks import DIVERGENCE
from backfill_platform.pipeline.validation.divergence import Divergence, PartitionDivergence
from backfill_platform.pipeline.validation.divergence_verdicts import divergence_verdicts
from backfill_platform.pipeline.validation.verdicts import PartitionVerdict

DAY, OTHER = "2026-10-01", "2026-10-02"


def only(verdicts: list[PartitionVerdict], day: str) -> PartitionVerdict:
    [verdict] = [v for v in verdicts if v.partition == day]
    return verdict


@pytest.fixture
def compared() -> Divergence:
    """What the comparison with production found (`divergence.compare`), filled in by each test."""
    return Divergence(notes={OTHER: f"production has no rows for {OTHER}: all 10 rows are new"})


def test_divergence_within_a_launched_bound_passes_and_above_it_blocks(compared: Divergence) -> None:
    compared.partitions[DAY] = PartitionDivergence(candidate_rows=100, production_rows=100, changed=10)  # 0.1
    [at_bound] = divergence_verdicts(DIVERGENCE, compared, [DAY], 0.1)
    assert (at_bound.check, at_bound.partition, at_bound.passed, at_bound.blocking) == (
        DIVERGENCE,
        DAY,
        True,
        True,
    )
    [above] = divergence_verdicts(DIVERGENCE, compared, [DAY], 0.09)
    assert not above.passed and above.blocking
    assert above.metadata["ratio"] == MetadataValue.float(0.1)
    assert above.metadata["max_ratio"] == MetadataValue.float(0.09)
    assert (above.metadata["changed"], above.metadata["diverging_rows"]) == (10, 10)


def test_the_ratio_counts_every_kind_against_the_larger_side(compared: Divergence) -> None:
    compared.partitions[DAY] = PartitionDivergence(
        candidate_rows=80, production_rows=100, only_in_candidate=5, only_in_production=25, changed=10
    )
    [verdict] = divergence_verdicts(DIVERGENCE, compared, [DAY], 0.4)
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
    [verdict] = divergence_verdicts(DIVERGENCE, compared, [DAY], 0.39)
    assert not verdict.passed


def test_without_a_bound_divergence_is_a_warning_and_a_first_promotion_none(compared: Divergence) -> None:
    compared.partitions[DAY] = PartitionDivergence(candidate_rows=100, production_rows=100, changed=1)
    compared.partitions[OTHER] = PartitionDivergence(
        candidate_rows=10, production_rows=0, only_in_candidate=10
    )
    verdicts = divergence_verdicts(DIVERGENCE, compared, [DAY, OTHER], None)
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
    verdicts = divergence_verdicts(DIVERGENCE, compared, [DAY, OTHER], None)
    assert all(v.passed and not v.blocking for v in verdicts)
    assert only(verdicts, DAY).metadata["sample"] == MetadataValue.text("no differences")
    assert only(verdicts, OTHER).metadata["ratio"] == MetadataValue.float(0.0)


def test_a_bound_holds_a_first_promotion_into_an_empty_production_to_its_ratio(compared: Divergence) -> None:
    # Unlike the warning, a bound counts a day production never had as all divergence (ratio 1.0).
    compared.partitions[OTHER] = PartitionDivergence(
        candidate_rows=10, production_rows=0, only_in_candidate=10
    )
    [verdict] = divergence_verdicts(DIVERGENCE, compared, [OTHER], 0.5)
    assert not verdict.passed and verdict.blocking
    assert verdict.metadata["ratio"] == MetadataValue.float(1.0)


def test_a_day_with_differing_rows_shows_them_as_its_sample(compared: Divergence) -> None:
    compared.partitions[DAY] = PartitionDivergence(candidate_rows=2, production_rows=2, changed=1)
    compared.sample_header = ["_kind", "title_id"]
    compared.samples[DAY] = [["changed", "t-1"]]
    [verdict] = divergence_verdicts(DIVERGENCE, compared, [DAY], None)
    sample = verdict.metadata["sample"]
    assert [record.data for record in sample.records] == [{"_kind": "changed", "title_id": "t-1"}]
