"""The partitioned Spark multi-asset of every stage: one Iceberg table, its per-day checks, one policy.

The events, shadow and production assets each write a range of event days with Spark and judge every
day on its own. What they share is declared here once: the stream's daily partitions (for the table and
each check), checks reported per day (blocking unless declared a warning), days that are skipped when
they fail, subsetting and the backfill policy. Each stage passes only what differs: its key, parents, checks, texts and pool.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Any

from dagster import (
    AssetCheckSpec,
    AssetDep,
    AssetKey,
    AssetsDefinition,
    AssetSpec,
    AutomationCondition,
    Failure,
    TimeWindowPartitionsDefinition,
    multi_asset,
)

from backfill_platform.masking import mask, mask_exception
from backfill_platform.pipeline.partitions import backfill_policy, event_partitions
from backfill_platform.pipeline.step_progress import step_progress
from backfill_platform.specs.stream import StreamSpec


def partitioned_spark_asset(
    key: AssetKey,
    stream: StreamSpec,
    *,
    deps: Sequence[AssetKey | AssetDep],
    checks: Mapping[str, str],
    warning_checks: Collection[str] = (),
    group_name: str,
    owner: str,
    description: str,
    metadata: Mapping[str, str],
    automation_condition: AutomationCondition | None = None,
    pool: str | None = None,
    partitions: TimeWindowPartitionsDefinition | None = None,
) -> Callable[[Callable[..., Any]], AssetsDefinition]:
    """A `multi_asset` decorator for the table `key`, partitioned by the event days of `stream`.

    `checks` maps each check's name to its description; each is partitioned like the table, so a range run
    gives each day its own verdict, and blocking, except `warning_checks`: those only warn unless a run
    makes them block (the evaluation then says so, and its failure fails the step like a blocking one).
    `partitions`: a dataset's own when they are not the stream's (`partitions.dataset_partitions`). The
    decorated function's parameters declare its resources (and config), as for `multi_asset`.
    """
    partitions = partitions or event_partitions(stream)
    decorate = multi_asset(
        name=key.to_python_identifier(),
        specs=[
            AssetSpec(
                key,
                deps=deps,
                partitions_def=partitions,
                # A day that fails a blocking check, or is held back from promotion, is not materialized
                # (see pipeline/validation/verdicts.py).
                skippable=True,
                automation_condition=automation_condition,
                group_name=group_name,
                kinds={"spark", "iceberg"},
                owners=[owner],
                description=description,
                metadata=metadata,
            )
        ],
        check_specs=[
            AssetCheckSpec(
                name,
                asset=key,
                blocking=name not in warning_checks,
                partitions_def=partitions,
                description=text,
            )
            for name, text in checks.items()
        ],
        # Makes the check outputs optional: verdicts are reported per day as check evaluations.
        can_subset=True,
        backfill_policy=backfill_policy(stream.max_partitions_per_run),
        pool=pool,
    )
    return lambda compute: decorate(masked_errors(compute))


def masked_errors(compute: Callable[..., Iterator]) -> Callable[..., Iterator]:
    """`compute` (a step's generator), logging its progress (`step_progress`), with every exception it raises masked before Dagster stores it: a
    step's error text, causes included, goes into the run's event log, and a catalog's or a client's
    answer may quote a URL with credentials or a request's headers (`masking.mask`). The one boundary
    every stage's errors cross, whatever raised them (PyIceberg, requests, boto3, Spark)."""

    @functools.wraps(compute)
    def run(*args: Any, **kwargs: Any) -> Iterator:
        context = kwargs.get("context", args[0] if args else None)
        try:
            # Signs of life between the step's start and end (what Spark runs, tasks, records).
            with step_progress(lambda line: context.log.info(mask(line))):
                yield from compute(*args, **kwargs)
        except Exception as error:
            # Masked in place and re-raised as itself: its type, traceback and metadata are kept.
            if isinstance(error, Failure) and error.description:
                error.description = mask(error.description)
            mask_exception(error)
            raise

    return run
