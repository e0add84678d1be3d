"""Declarative daily refresh: Dagster AutomationConditions for the archive, events, shadow and production.

- The archive (observable source) is observed on the stream's `archive_observation_cron`; an ingestion
  hour whose manifest changed gets a new data version.
- A day is in the **refresh window** when it is settled (day end + allowed_lateness + 1h has passed) and
  within `refresh_horizon` of the end of the latest complete day. Nothing outside it is requested.
- Events of a day in the window are requested when the day has never been materialized (and its last
  attempt did not fail), when it has just settled (a day run before it settled is run again), or when an
  archive hour of its exact read window got a new data version since the day was last requested or
  materialized (a late file). Never while the day or the archive observation is in progress.
- The active version's shadow, then production, follow the same window: requested when their parent was
  updated, or when never materialized; never while the parent day is missing or in progress, or while
  the parent's blocking checks have not passed for that day (partitioned checks: per day). A parent
  requested on the same tick counts as updated, and its checks as passing if that day's last verdicts
  passed: a re-run of a validated day is one run, stopped inside the run by its blocking checks.

`SettledDays` is the one custom condition: no built-in condition is anchored to the evaluation time with
an hour-level offset (`in_latest_time_window` only counts whole partitions back from the latest one). It
is not serialized into the code location snapshot (only its description is), so these conditions are
evaluated by an automation sensor running in the user code server (see `automation.sensor`).
"""

from __future__ import annotations

from datetime import timedelta

from dagster import (
    AssetKey,
    AutomationCondition,
    AutomationContext,
    AutomationResult,
    TimeWindowPartitionsDefinition,
)

from backfill_platform.specs.stream import StreamSpec

HOUR = timedelta(hours=1)


class SettledDays(AutomationCondition[AssetKey]):
    """True for the time partitions whose lateness horizon has passed: end + allowed_lateness + 1h <= now.

    `now` is the evaluation time. This matches `events.ingest.read_window`: the last ingestion hour a
    day reads ends at its end + allowed_lateness + 1h.
    """

    def __init__(self, allowed_lateness: timedelta):
        self.allowed_lateness = allowed_lateness

    @property
    def name(self) -> str:
        return f"settled(allowed_lateness={self.allowed_lateness})"

    @property
    def description(self) -> str:
        return f"Partition end + allowed lateness ({self.allowed_lateness}) + 1h has passed"

    @property
    def requires_cursor(self) -> bool:
        return False

    def evaluate(self, context: AutomationContext) -> AutomationResult:
        partitions_def = context.partitions_def
        if not isinstance(partitions_def, TimeWindowPartitionsDefinition):
            raise TypeError(f"{self.name} applies to time-partitioned assets, not {context.key}")
        settled_before = context.evaluation_time - self.allowed_lateness - HOUR
        keys = {
            key
            for key in context.candidate_subset.expensively_compute_partition_keys()
            if partitions_def.time_window_for_partition_key(key).end <= settled_before
        }
        return AutomationResult(
            context=context,
            true_subset=context.candidate_subset.compute_intersection_with_partition_keys(keys),
        )


def refresh_window(spec: StreamSpec) -> AutomationCondition:
    """Settled days within the refresh horizon (the time filter comes first: it bounds the candidates)."""
    return (
        AutomationCondition.in_latest_time_window(lookback_delta=spec.refresh_horizon)
        & SettledDays(spec.allowed_lateness)
    ).with_label(f"settled, within {spec.refresh_horizon}")


def _never_materialized() -> AutomationCondition:
    # Failed attempts are not retried on every tick: a new trigger (late file, settling) retries them.
    return (AutomationCondition.missing() & ~AutomationCondition.execution_failed()).with_label(
        "never materialized (and not failed)"
    )


def archive_observation_condition(spec: StreamSpec) -> AutomationCondition:
    """Observe the archive once per cron tick. The latest ingestion hour stands for the whole archive:
    the observation function lists every hour and reports a data version for each."""
    cron = spec.archive_observation_cron
    return (
        AutomationCondition.in_latest_time_window()
        & AutomationCondition.cron_tick_passed(cron, "UTC").since_last_handled()
        & ~AutomationCondition.in_progress()
    ).with_label(f"observe on {cron} (UTC)")


def events_condition(spec: StreamSpec) -> AutomationCondition:
    """Events of a settled day: new, just settled, or one of its archive hours has a new data version."""
    window = refresh_window(spec)
    archive_hour_changed = AutomationCondition.any_deps_match(AutomationCondition.newly_updated()).with_label(
        "an archive hour of its read window has a new data version"
    )
    return (
        window
        & (
            _never_materialized()
            | (window.newly_true().with_label("newly settled") | archive_hour_changed).since_last_handled()
        )
        & ~AutomationCondition.any_deps_in_progress()
        & ~AutomationCondition.in_progress()
    ).with_label("daily refresh: events")


def _downstream_condition(spec: StreamSpec, label: str) -> AutomationCondition:
    return (
        refresh_window(spec)
        & (_never_materialized() | AutomationCondition.any_deps_updated().since_last_handled())
        & AutomationCondition.all_deps_blocking_checks_passed()
        & ~AutomationCondition.any_deps_missing()
        & ~AutomationCondition.any_deps_in_progress()
        & ~AutomationCondition.in_progress()
    ).with_label(label)


def shadow_condition(spec: StreamSpec) -> AutomationCondition:
    """The active version's shadow of a settled day, after (or with) its events. `spec` is the source stream."""
    return _downstream_condition(spec, "daily refresh: active shadow")


def production_condition(spec: StreamSpec) -> AutomationCondition:
    """Promotion of a settled day, after (or with) the active shadow. `spec` is the source stream."""
    return _downstream_condition(spec, "daily refresh: production")
