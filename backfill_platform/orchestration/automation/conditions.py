"""Declarative daily refresh: Dagster AutomationConditions for the archive, events, shadow and production.

- The archive (observable source) is observed on the stream's `archive_observation_cron`; an ingestion
  hour whose manifest changed gets a new data version.
- A day is in the **refresh window** when it is settled (day end + allowed_lateness + 1h has passed) and
  within `refresh_horizon` of the end of the latest complete day. Nothing outside it is requested.
- Events of a day in the window are requested when the day is missing, when it has just settled (a day
  run before it settled is run again), or when what its last run read differs from the archive as
  observed after that read (`read_versions.ArchiveReadChanged`: a comparison, so neither a first
  observation nor a file observed while the day's run is in flight is mistaken for, or lost as, a change).
- The active version's shadow, then production, are requested when missing, when a parent was updated
  since the day itself was (by any run, its own chain's included), or when a parent is requested on the
  same tick; never while the parent day is missing or in progress, or while the parent's blocking checks
  have not passed for that day. A parent requested on the same tick counts as passing if that day's last
  verdicts passed: a re-run of a validated day is one run, stopped inside the run by its blocking checks.

The state of a day, per asset (events, shadow, production), and what moves it:

| state | moves to | when (condition) |
| --- | --- | --- |
| current | requested | events: missing, newly settled, or `ArchiveReadChanged`; shadow/production: missing, a parent updated since this day was (`behind_parent`), or a parent requested on this tick; always within the refresh window, with the parent's blocking checks passed and nothing in progress |
| requested | in progress | the sensor's run request starts a run; `in_progress` blocks a second request |
| in progress | validated / promoted (current) | the run materializes the day after its blocking checks passed (shadow: validated; production: promoted, the gate let it through) |
| in progress | failed | a blocking check failed, the step raised, or the worker died (run monitoring fails the run) |
| in progress | refused | production's gate refused (the events changed since the shadow was validated, a fence): a failed step, so a failed day |
| failed / refused | requested | shadow/production: a parent was materialized after the failed attempt began (`FailedSinceParentUpdate` is false), e.g. the shadow updated in the refused chain itself, or re-validated later; events: what the day would read changed (`ArchiveReadChanged` against the failed attempt's own read, or an archive hour changed since the request) |
| failed / refused | stays | nothing it depends on changed since the attempt: retrying would repeat the failure, so the day waits, quietly, for a new trigger; a crashed run (no verdict) is re-executed on the next tick (`failures.FailedOnAVerdict`) |

Divergence from production is declared a warning (non-blocking; a run may set a bound, and then its
failure fails the run itself), so production's gate on its parent's blocking checks leaves it aside: a
shadow re-validated alone after a late file always diverges from production, and is still promoted.

The latch that used to request a downstream day (`any_deps_updated().since_last_handled()`) lost both
retries: `any_deps_updated` ignores a parent update by a run that also targeted the day, and the latch is
reset by the request itself, so a promotion refused inside its chain was never requested again.

Custom conditions, where no built-in one says it: `SettledDays` (no built-in condition is anchored to the
evaluation time with an hour-level offset; `in_latest_time_window` only counts whole partitions back from
the latest one), `ArchiveReadChanged`/`HasReadRecord` (a comparison of recorded reads, `read_versions`)
and `FailedOnAVerdict`/`FailedSinceParentUpdate` (why and when a day failed, `failures`). They are not
serialized into the code location snapshot (only their descriptions are), so these conditions are
evaluated by an automation sensor running in the user code server (see `automation.sensor`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from dagster import (
    AssetKey,
    AutomationCondition,
    AutomationContext,
    AutomationResult,
    TimeWindowPartitionsDefinition,
)

from backfill_platform.orchestration.automation.failures import FailedOnAVerdict, FailedSinceParentUpdate
from backfill_platform.orchestration.automation.read_versions import ArchiveReadChanged, HasReadRecord
from backfill_platform.pipeline.hour_mapping import read_after
from backfill_platform.specs.stream import StreamSpec


class SettledDays(AutomationCondition[AssetKey]):
    """True for the time partitions whose lateness horizon has passed: end + allowed_lateness + 1h <= now.

    `now` is the evaluation time. A day settles when its read window ends (`hour_mapping.ReadWindow`):
    the last ingestion hour a day reads ends at its end + `read_after(allowed_lateness)`.
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
        settled_before = context.evaluation_time - read_after(self.allowed_lateness)
        keys = {
            key
            for key in context.candidate_subset.expensively_compute_partition_keys()
            if partitions_def.time_window_for_partition_key(key).end <= settled_before
        }
        return AutomationResult(
            context=context,
            true_subset=context.candidate_subset.compute_intersection_with_partition_keys(keys),
        )


def refresh_window(streams: Sequence[StreamSpec]) -> AutomationCondition:
    """Settled days within the refresh horizon (the time filter comes first: it bounds the candidates).

    For a dataset of several sources a day is settled when the slowest source's is (the largest allowed
    lateness: the global watermark is the slowest source's), and refreshed within the widest horizon."""
    lateness = max(s.allowed_lateness for s in streams)
    horizon = max(s.refresh_horizon for s in streams)
    return (
        AutomationCondition.in_latest_time_window(lookback_delta=horizon) & SettledDays(lateness)
    ).with_label(f"settled, within {horizon}")


def archive_observation_condition(spec: StreamSpec) -> AutomationCondition:
    """Observe the archive once per cron tick. The latest ingestion hour stands for the whole archive:
    the observation function lists every hour and reports a data version for each."""
    cron = spec.archive_observation_cron
    return (
        AutomationCondition.in_latest_time_window()
        & AutomationCondition.cron_tick_passed(cron, "UTC").since_last_handled()
        & ~AutomationCondition.in_progress()
    ).with_label(f"observe on {cron} (UTC)")


def events_condition(spec: StreamSpec, archive: AssetKey) -> AutomationCondition:
    """Events of a settled day: new, just settled, or what it read differs from the archive as observed."""
    window = refresh_window([spec])
    archive_hour_changed = AutomationCondition.any_deps_match(AutomationCondition.newly_updated()).with_label(
        "an archive hour of its read window has a new data version"
    )
    read_changed = ArchiveReadChanged(spec, archive)
    # Days materialized before read versions were recorded fall back to the edge of an observation.
    legacy_changed = (archive_hour_changed.since_last_handled() & ~HasReadRecord()).with_label(
        "an archive hour changed (no read recorded)"
    )
    return (
        window
        & (
            AutomationCondition.missing()
            | window.newly_true().with_label("newly settled").since_last_handled()
            | read_changed
            | legacy_changed
        )
        # A failed day waits until what it would read changed: no retry of the same failure every tick.
        & ~(
            AutomationCondition.execution_failed()
            & FailedOnAVerdict()
            & ~read_changed
            & ~archive_hour_changed.since(AutomationCondition.newly_requested())
        ).with_label("failed, and nothing it reads changed since")
        & ~AutomationCondition.any_deps_in_progress()
        & ~AutomationCondition.in_progress()
    ).with_label("daily refresh: events")


def _parent_checks_passed() -> AutomationCondition:
    """Every parent partition the day reads passed its blocking checks, or is requested on this tick.

    `all_deps_blocking_checks_passed` holds when *a* partition of each parent matches (`all_deps_match`),
    but a join's day reads its lookback's day before as well: each of them must pass.
    """
    checks = AutomationCondition.all_checks_match(
        AutomationCondition.check_passed() | AutomationCondition.will_be_requested(), blocking_only=True
    )
    failing = (~checks.with_label("all_blocking_checks_passed")).with_label("a blocking check not passed")
    return (~AutomationCondition.any_deps_match(failing)).with_label("all_deps_blocking_checks_passed")


def _downstream_condition(sources: Sequence[StreamSpec], label: str) -> AutomationCondition:
    # Updated by any run, this day's own included: a run that updated the parent and then failed on this
    # day leaves it behind its parent. `any_deps_updated` ignores updates by runs that targeted this day,
    # and `since_last_handled` resets on the request: a refused promotion was never requested again.
    parent_updated = AutomationCondition.any_deps_match(AutomationCondition.newly_updated()).with_label(
        "a parent was updated"
    )
    behind_parent = parent_updated.since(AutomationCondition.newly_updated()).with_label(
        "a parent was updated since this day was"
    )
    parent_requested = AutomationCondition.any_deps_match(AutomationCondition.will_be_requested()).with_label(
        "a parent is requested on this tick"
    )
    return (
        refresh_window(sources)
        & (AutomationCondition.missing() | behind_parent | parent_requested)
        & ~(
            AutomationCondition.execution_failed() & FailedOnAVerdict() & FailedSinceParentUpdate()
        ).with_label("failed, and no parent updated since")
        & _parent_checks_passed()
        & ~AutomationCondition.any_deps_missing()
        & ~AutomationCondition.any_deps_in_progress()
        & ~AutomationCondition.in_progress()
    ).with_label(label)


def shadow_condition(sources: Sequence[StreamSpec]) -> AutomationCondition:
    """The active version's shadow of a settled day, after (or with) its events: the day waits for each
    source day it reads (its parents' partitions)."""
    return _downstream_condition(sources, "daily refresh: active shadow")


def production_condition(sources: Sequence[StreamSpec]) -> AutomationCondition:
    """Promotion of a settled day, after (or with) the active shadow, whose divergence is a warning
    check: it does not hold the day back."""
    return _downstream_condition(sources, "daily refresh: production")
