"""When a failed day is retried: after a crash at once, after a verdict only once something it reads moved.

A day's latest attempt failed either on a verdict (a blocking check, the promotion gate, a step that
raised: Dagster records the run's failure reason `STEP_FAILURE`) or by a crash (the worker died, the run
was terminated, it never started). A verdict given on inputs that have not changed since would be given
again, so the refresh waits for a new trigger; a crash says nothing about the inputs, so the day is
retried on the next tick (failpoints and SIGKILLs of run workers are finite; a crash that repeats on
every attempt shows as one failed run per tick, one at a time).
"""

from __future__ import annotations

from dagster import (
    AssetKey,
    AssetRecordsFilter,
    AutomationCondition,
    AutomationContext,
    AutomationResult,
    DagsterInstance,
    RunRecord,
)

from backfill_platform.dagster_internals import RUN_FAILURE_REASON_TAG, RunFailureReason


def latest_attempt(instance: DagsterInstance, key: AssetKey, day: str) -> RunRecord | None:
    """The run of the day's latest planned materialization (what `execution_failed` judges)."""
    planned = instance.get_latest_planned_materialization_info(key, day)
    return instance.get_run_record_by_id(planned.run_id) if planned else None


def failed_on_a_verdict(record: RunRecord) -> bool:
    return record.dagster_run.tags.get(RUN_FAILURE_REASON_TAG) == RunFailureReason.STEP_FAILURE.value


class _PerDay(AutomationCondition[AssetKey]):
    @property
    def requires_cursor(self) -> bool:
        return False

    def holds(self, context: AutomationContext, day: str) -> bool:
        raise NotImplementedError

    def evaluate(self, context: AutomationContext) -> AutomationResult:
        days = {
            day
            for day in context.candidate_subset.expensively_compute_partition_keys()
            if self.holds(context, day)
        }
        return AutomationResult(
            context=context,
            true_subset=context.candidate_subset.compute_intersection_with_partition_keys(days),
        )


class FailedOnAVerdict(_PerDay):
    """True for the days whose latest attempt failed on a verdict, not by a crash (after `execution_failed`)."""

    @property
    def name(self) -> str:
        return "failed on a verdict (not a crash)"

    def holds(self, context: AutomationContext, day: str) -> bool:
        record = latest_attempt(context.asset_graph_view.instance, context.key, day)
        return record is not None and failed_on_a_verdict(record)


class FailedSinceParentUpdate(_PerDay):
    """True for the days whose latest attempt began after the latest update of every parent partition
    the day reads (its own day, and the days a source's lookback reaches into).

    Retrying such a day would repeat what failed. A run that updated the parent itself and then failed on
    this day (a promotion refused in its chain) began before that update: the day is retried.
    """

    @property
    def name(self) -> str:
        return "no parent updated since the failed attempt began"

    def holds(self, context: AutomationContext, day: str) -> bool:
        instance = context.asset_graph_view.instance
        record = latest_attempt(instance, context.key, day)
        if record is None:
            return False
        began = record.start_time or record.create_timestamp.timestamp()
        the_day = context.candidate_subset.compute_intersection_with_partition_keys({day})
        return all(
            r.timestamp <= began
            for parent in context.asset_graph.get(context.key).parent_entity_keys
            for parent_day in the_day.compute_parent_subset(parent).expensively_compute_partition_keys()
            for r in instance.fetch_materializations(
                AssetRecordsFilter(asset_key=parent, asset_partitions=[parent_day]), limit=1
            ).records
        )
