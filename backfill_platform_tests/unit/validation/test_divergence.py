"""How much a candidate diverges from production (`pipeline/validation/divergence.py`, the figures, not
`compare`): a partition's diverging rows are those only in one side plus those changed, its ratio is
them over the larger side (0 when both are empty); a range's ratio weighs each partition by its size, so
it is not the mean of the partitions' ratios."""

from __future__ import annotations

import pytest

from backfill_platform.pipeline.validation.divergence import Divergence, PartitionDivergence


def test_a_partition_without_rows_or_differences_diverges_nowhere() -> None:
    assert PartitionDivergence().diverging == 0
    assert PartitionDivergence().ratio == 0.0
    same = PartitionDivergence(candidate_rows=100, production_rows=100)
    assert same.diverging == 0
    assert same.ratio == 0.0


def test_diverging_rows_are_those_only_in_one_side_and_those_changed() -> None:
    assert PartitionDivergence(10, 10, only_in_candidate=1).diverging == 1
    assert PartitionDivergence(10, 10, only_in_production=2).diverging == 2
    assert PartitionDivergence(10, 10, changed=3).diverging == 3
    assert PartitionDivergence(10, 10, 1, 2, 3).diverging == 6


def test_the_ratio_is_over_the_larger_side() -> None:
    assert PartitionDivergence(100, 100, changed=5).ratio == pytest.approx(0.05)
    # More rows in production than in the candidate: the base is production's.
    assert PartitionDivergence(80, 100, only_in_production=20).ratio == pytest.approx(0.2)
    # More in the candidate: the candidate's.
    assert PartitionDivergence(200, 100, only_in_candidate=100).ratio == pytest.approx(0.5)


def test_a_partition_production_never_had_diverges_entirely() -> None:
    assert PartitionDivergence(candidate_rows=50, only_in_candidate=50).ratio == 1.0
    assert PartitionDivergence(production_rows=50, only_in_production=50).ratio == 1.0


def test_a_range_without_partitions_diverges_nowhere() -> None:
    empty = Divergence()
    assert empty.diverging == 0
    assert empty.ratio == 0.0
    assert Divergence({"2026-10-01": PartitionDivergence()}).ratio == 0.0


def test_a_range_adds_up_its_partitions_and_weighs_them_by_size() -> None:
    result = Divergence(
        {
            "2026-10-01": PartitionDivergence(1000, 1000, changed=10),  # 1%
            "2026-10-02": PartitionDivergence(0, 10, only_in_production=10),  # 100%
            "2026-10-03": PartitionDivergence(),  # nothing on either side
        }
    )
    assert result.diverging == 20
    assert result.ratio == pytest.approx(20 / 1010)
    mean = sum(p.ratio for p in result.partitions.values()) / len(result.partitions)
    assert result.ratio != pytest.approx(mean)


def test_a_range_of_one_partition_has_its_ratio() -> None:
    partition = PartitionDivergence(80, 100, only_in_candidate=3, only_in_production=7, changed=5)
    result = Divergence({"2026-10-01": partition})
    assert result.diverging == partition.diverging == 15
    assert result.ratio == pytest.approx(partition.ratio) == pytest.approx(0.15)


def test_a_new_divergence_shares_no_state_with_another() -> None:
    first, second = Divergence(), Divergence()
    first.partitions["2026-10-01"] = PartitionDivergence(1, 0, only_in_candidate=1)
    first.notes["2026-10-01"] = "new"
    first.samples["2026-10-01"] = [["a"]]
    assert second.partitions == {} and second.notes == {} and second.samples == {}
    assert second.sample_header == [] and second.sample_rows == []
