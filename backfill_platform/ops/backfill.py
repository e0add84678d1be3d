"""`backfill-platform backfill`: events → active shadow → checks → production for a range, in one run.

A request (dataset, range, reason, ticket, policy, dry run) is either run in this process
(`ops/in_process.py`) or submitted to a running webserver (`--instance URL`, `ops/submit.py`). Both
end with the same outcome, read back the same way (`ops/read_back.py`): each failed check and day from
the runs' check evaluations, each day's figures and promotion from the ledger. This module holds the
request, the outcome and its report: a table per day, and one line per failed check and day.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date

from dagster import AssetKey
from rich.table import Table

from backfill_platform.ops.ledger_view import Row, production_label
from backfill_platform.pipeline.events.assets import events_key
from backfill_platform.pipeline.partitions import days_between
from backfill_platform.pipeline.promotion.assets import production_key
from backfill_platform.pipeline.run_tags import (
    ALL_OR_NOTHING,
    PER_DAY,
    PROMOTION_POLICY_TAG,
    REASON_TAG,
    TICKET_TAG,
)
from backfill_platform.pipeline.shadow.assets import shadow_key
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.durations import DAY
from backfill_platform.specs.stream import StreamSpec

POLICIES = {"all": ALL_OR_NOTHING, "per-day": PER_DAY}


@dataclass(frozen=True)
class BackfillRequest:
    dataset: DatasetSpec
    stream: StreamSpec
    start: date
    end: date  # exclusive
    reason: str | None = None
    ticket: str | None = None
    dry_run: bool = False
    policy: str = ALL_OR_NOTHING
    log_level: str = "CRITICAL"  # failures are reported from the run's events, not its log
    # Every source of a dataset with several (`stream` is the first); the range re-derives each one's
    # events. Days a lookback reaches before the range are read as they are.
    sources: tuple[StreamSpec, ...] = ()

    @property
    def days(self) -> list[date]:
        return days_between(self.start, self.end)

    def asset_keys(self) -> list[AssetKey]:
        events = [events_key(s) for s in self.sources or (self.stream,)]
        keys = [*events, shadow_key(self.dataset, self.dataset.active_version)]
        return keys if self.dry_run else [*keys, production_key(self.dataset)]

    def tags(self) -> dict[str, str]:
        tags = {
            "dagster/asset_partition_range_start": self.start.isoformat(),
            "dagster/asset_partition_range_end": (self.end - DAY).isoformat(),
            PROMOTION_POLICY_TAG: self.policy,
        }
        tags |= {REASON_TAG: self.reason} if self.reason else {}
        return tags | ({TICKET_TAG: self.ticket} if self.ticket else {})


@dataclass(frozen=True)
class DayProblem:
    """A check that failed (or warned) for one day, with its numbers."""

    day: str
    asset: str
    check: str
    detail: str
    blocking: bool


@dataclass
class BackfillOutcome:
    request: BackfillRequest
    run_id: str  # the run (in process), or the backfill's id when submitted
    success: bool
    problems: list[DayProblem]
    step_failures: list[str]
    validations: dict[date, Row] = field(default_factory=dict)  # latest ledger row of the version
    ingestions: dict[date, Row] = field(default_factory=dict)  # latest events figures
    production: dict[date, Row] = field(default_factory=dict)  # what production holds now
    run_ids: tuple[str, ...] = ()  # every run of a submitted backfill; () means (run_id,)
    backfill_id: str | None = None  # set when submitted to a webserver

    def promoted_by_this_run(self, day: date) -> bool:
        row = self.production.get(day)
        return bool(row and row.get("promotion_run_id") in (self.run_ids or (self.run_id,)))

    @property
    def held_back(self) -> list[date]:
        """Days this run was asked to promote and did not (none in a dry run)."""
        if self.request.dry_run:
            return []
        return [d for d in self.request.days if not self.promoted_by_this_run(d)]

    @property
    def ok(self) -> bool:
        blocking = any(p.blocking for p in self.problems)
        return self.success and not blocking and not self.held_back


def report_table(outcome: BackfillOutcome) -> Table:
    """Per day, from the ledger: the events figures, the shadow, the checks and what production holds."""
    r = outcome.request
    what = "dry run" if r.dry_run else "backfill"
    runs = outcome.run_ids or (outcome.run_id,)
    source = f"run {', '.join(runs)}" if len(runs) <= 2 else f"{len(runs)} runs"
    source = f"backfill {outcome.backfill_id}, {source}" if outcome.backfill_id else source
    title = f"{r.dataset.name} {r.dataset.active_version} {what} ({source}), per day, from the ledger"
    table = Table(title=title)
    header = ("day", "records", "events", "dup", "quar.", "shadow rows", "checks", "production", "this run")
    for column in header:
        table.add_column(column, justify="right")
    for day in r.days:
        events, shadow = outcome.ingestions.get(day, {}), outcome.validations.get(day, {})
        checks = (
            "-" if not shadow else "passed" if shadow["checks_passed"] else f"[red]{shadow['failed_checks']}"
        )
        promoted = outcome.promoted_by_this_run(day)
        verdict = "dry run" if r.dry_run else "promoted" if promoted else "[red]held back"
        table.add_row(
            day.isoformat(), _n(events.get("records")), _n(events.get("written")),
            _n(events.get("duplicates")), _n(events.get("quarantined")), _n(shadow.get("shadow_rows")),
            checks, production_label(outcome.production.get(day)), verdict,
        )  # fmt: skip
    return table


def problem_lines(outcome: BackfillOutcome) -> list[str]:
    """`2026-10-03 quarantine_ratio 3.1% > 1%: 981 lines unknown_schema_version`, per failed day."""
    lines = [f"{p.day} {p.check} {p.detail}" + ("" if p.blocking else " (warning)") for p in outcome.problems]
    lines += [f"step {failure}" for failure in outcome.step_failures]
    return lines


def _n(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"
