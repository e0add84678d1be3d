"""What `backfill --dataset` tells its runs (`operations/backfill.py` `BackfillRequest.tags`) is what the one
parser of run settings (`pipeline/run_settings.py`) reads back: the policy chosen, and for a join, the
partitions before the range its lookback reads, under the tag's new name only."""

from __future__ import annotations

from datetime import date

from backfill_platform.components.registry import package_project, project_specs
from backfill_platform.operations.backfill import POLICIES, BackfillRequest
from backfill_platform.pipeline.run_settings import (
    OLD_PARTITIONS_BEFORE_TAG,
    PARTITIONS_BEFORE_TAG,
    PromotionPolicy,
    RunSettings,
    run_settings,
)


def request(dataset: str, policy: str) -> BackfillRequest:
    specs = project_specs(package_project())
    spec = specs.datasets[dataset]
    sources = tuple(specs.streams[name] for name in spec.stream_names)
    return BackfillRequest(
        spec, sources[0], date(2026, 10, 2), date(2026, 10, 4), policy=POLICIES[policy], sources=sources
    )


def test_a_joins_backfill_tells_its_run_the_policy_and_the_day_before_its_lookback_reads(data_dir) -> None:
    (run,) = request("attributed_plays", "per-day").runs()
    assert run.tags[PARTITIONS_BEFORE_TAG] == "impressions=1" and OLD_PARTITIONS_BEFORE_TAG not in run.tags
    assert run_settings(run.tags) == RunSettings(
        promotion_policy=PromotionPolicy.per_day, partitions_before={"impressions": 1}
    )


def test_a_backfill_without_a_lookback_tells_only_its_policy(data_dir) -> None:
    (run,) = request("views_per_title", "all").runs()
    assert PARTITIONS_BEFORE_TAG not in run.tags
    assert run_settings(run.tags) == RunSettings()
