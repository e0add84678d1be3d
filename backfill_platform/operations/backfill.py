"""`backfill-platform backfill`: events → active shadow → checks → production for a range, in one run.

A request (dataset, range, reason, ticket, policy, dry run) is either run in this process
(`operations/in_process.py`) or submitted to a running webserver (`--instance URL`,
`operations/submit.py`). Both end with the same outcome, read back the same way
(`operations/read_back.py`): each failed check and day from the runs' check evaluations, each day's figures and promotion from the ledger. This module holds the
request, the outcome and its report: a table per day, and one line per failed check and day.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime

from dagster import AssetKey
from rich.table import Table

from backfill_platform.dagster_internals import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG
from backfill_platform.operations.ledger_view import Row, production_label
from backfill_platform.pipeline.names import events_key, production_key, shadow_key
from backfill_platform.pipeline.run_settings import (
    PARTITIONS_BEFORE_TAG,
    PROMOTION_POLICY_TAG,
    PromotionPolicy,
    partitions_before_tag,
)
from backfill_platform.pipeline.run_tags import REASON_TAG, TICKET_TAG
from backfill_platform.pipeline.shadow.inputs import source_days
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.durations import midnight
from backfill_platform.specs.grain import Grain
from backfill_platform.specs.stream import StreamSpec

POLICIES = {"all": PromotionPolicy.all_or_nothing, "per-day": PromotionPolicy.per_day}


@dataclass(frozen=True)
class BackfillRequest:
    dataset: DatasetSpec
    stream: StreamSpec
    # Days (dates) of a daily dataset; UTC instants on the hour for an hourly one (`cli.app.partition_range`).
    start: date | datetime
    end: date | datetime  # exclusive
    reason: str | None = None
    ticket: str | None = None
    dry_run: bool = False
    policy: PromotionPolicy = PromotionPolicy.all_or_nothing
    log_level: str = "CRITICAL"  # failures are reported from the run's events, not its log
    # Every source of a dataset with several (`stream` is the first); the range re-derives each one's
    # events, and the run ingests the source days a lookback reads before the range, unless they are
    # already ingested, passed and unchanged (`pipeline/events/partitions_before.py`).
    sources: tuple[StreamSpec, ...] = ()

    @property
    def grain(self) -> Grain:
        return self.dataset.grain

    @property
    def instants(self) -> tuple[datetime, datetime]:
        """[start, end) as UTC instants."""
        return self.grain.start(self.start), self.grain.start(self.end)

    @property
    def days(self) -> list[str]:
        """The range's partition keys: its days, or its hours (`2026-10-01-14:00`) for an hourly dataset."""
        return self.grain.keys_between(*self.instants)

    @property
    def streams(self) -> tuple[StreamSpec, ...]:
        return self.sources or (self.stream,)

    @property
    def mixed(self) -> bool:
        """Whether a source's partitions are not the dataset's (its hours under the dataset's days)."""
        return any(s.grain != self.grain for s in self.streams)

    @property
    def partitions_before(self) -> dict[str, list[str]]:
        """Per source of the dataset's grain whose lookback reaches before the range: those partitions
        (from the stream's first). A source of another grain has them in its own run (`source_keys`)."""
        streams = {s.name: s for s in self.streams}
        grain, start = self.grain, self.instants[0]
        before = {}
        for source in self.dataset.inputs:
            stream = streams[source.stream]
            if stream.grain != grain:
                continue
            first = grain.key(midnight(stream.first_partition))
            keys = [grain.key(start - n * grain.length) for n in range(source.partitions_back(grain), 0, -1)]
            if keys := [k for k in keys if k >= first]:
                before[source.stream] = keys
        return before

    def source_keys(self, stream: StreamSpec) -> list[str]:
        """The partitions of a source the range reads, lookback included (`shadow.inputs.source_days`)."""
        source = next(i for i in self.dataset.inputs if i.stream == stream.name)
        first = stream.grain.key(midnight(stream.first_partition))
        read = source_days(self.days, source, self.grain, stream.grain)
        return [key for key in read if key >= first]

    def asset_keys(self) -> list[AssetKey]:
        keys = [*(events_key(s) for s in self.streams), shadow_key(self.dataset, self.dataset.active_version)]
        return keys if self.dry_run else [*keys, production_key(self.dataset)]

    def runs(self) -> list[BackfillRun]:
        """The Dagster runs of the backfill, in order: one; or, when a source's partitions are not the
        dataset's, first one per such source over the partitions the range reads of it (its hours), then
        the dataset's steps (with the sources of its grain) over the range."""
        if not self.mixed:
            return [BackfillRun(self.asset_keys(), self.tags(self.days))]
        runs = [
            BackfillRun([events_key(s)], self.tags(self.source_keys(s), with_partitions_before=False))
            for s in self.streams
            if s.grain != self.grain
        ]
        dataset_keys = [
            k
            for k in self.asset_keys()
            if k not in {events_key(s) for s in self.streams if s.grain != self.grain}
        ]
        return [*runs, BackfillRun(dataset_keys, self.tags(self.days))]

    def tags(self, keys: list[str] | None = None, with_partitions_before: bool = True) -> dict[str, str]:
        """A run's tags: the range of `keys` (default: the range's own partitions), policy, reason,
        ticket, and the days before the range that lookbacks read."""
        keys = keys or self.days
        tags = {
            ASSET_PARTITION_RANGE_START_TAG: keys[0],
            ASSET_PARTITION_RANGE_END_TAG: keys[-1],
            PROMOTION_POLICY_TAG: self.policy.value,
        }
        if self.partitions_before and with_partitions_before:
            counts = {stream: len(days) for stream, days in self.partitions_before.items()}
            tags[PARTITIONS_BEFORE_TAG] = partitions_before_tag(counts)
        tags |= {REASON_TAG: self.reason} if self.reason else {}
        return tags | ({TICKET_TAG: self.ticket} if self.ticket else {})


@dataclass(frozen=True)
class BackfillRun:
    """One Dagster run of a backfill: its assets and its tags (the partition range among them)."""

    asset_keys: list[AssetKey]
    tags: dict[str, str]


@dataclass(frozen=True)
class PartitionProblem:
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
    problems: list[PartitionProblem]
    step_failures: list[str]
    # By partition key:
    validations: dict[str, Row] = field(default_factory=dict)  # latest ledger row of the version
    ingestions: dict[str, Row] = field(default_factory=dict)  # latest events figures
    production: dict[str, Row] = field(default_factory=dict)  # what production holds now
    run_ids: tuple[str, ...] = ()  # every run of a submitted backfill; () means (run_id,)
    backfill_id: str | None = None  # set when submitted to a webserver
    # (source, day before the range its lookback reads) -> that day's latest events figures
    before: dict[tuple[str, str], Row] = field(default_factory=dict)

    @property
    def runs(self) -> tuple[str, ...]:
        """Every run of this backfill: its runs when submitted, else the one run."""
        return self.run_ids or (self.run_id,)

    def promoted_by_this_run(self, day: str) -> bool:
        row = self.production.get(day)
        return bool(row and row.get("promotion_run_id") in self.runs)

    @property
    def held_back(self) -> list[str]:
        """Days this run was asked to promote and did not (none in a dry run)."""
        if self.request.dry_run:
            return []
        return [d for d in self.request.days if not self.promoted_by_this_run(d)]

    @property
    def ok(self) -> bool:
        blocking = any(p.blocking for p in self.problems)
        return self.success and not blocking and not self.held_back


# Up to this many days, the report has a row per day; beyond, runs of unremarkable days are summed.
PER_DAY_ROWS_UP_TO = 31
REPORT_HEADER = (
    "day",
    "records",
    "events",
    "dup",
    "quar.",
    "shadow rows",
    "checks",
    "production",
    "this run",
)


def report_table(outcome: BackfillOutcome, per_day: bool | None = None) -> Table:
    """Per day, from the ledger: the events figures, the shadow, the checks and what production holds.

    A long range (more than `PER_DAY_ROWS_UP_TO` days, unless `per_day`) stays readable: each run of
    consecutive days of one month that passed their checks and reached their end (promoted, or checked in
    a dry run) is one row of sums, e.g. `2026-10-01…2026-10-31 (31 days)`; every other day keeps its row.
    """
    r = outcome.request
    what = "dry run" if r.dry_run else "backfill"
    runs = outcome.runs
    source = f"run {', '.join(runs)}" if len(runs) <= 2 else f"{len(runs)} runs"
    source = f"backfill {outcome.backfill_id}, {source}" if outcome.backfill_id else source
    per_day = len(r.days) <= PER_DAY_ROWS_UP_TO if per_day is None else per_day
    unit = r.grain.unit
    grouping = f"per {unit}" if per_day else f"per {unit}, passed {unit}s summed per {_summed_over(r.grain)}"
    table = Table(
        title=f"{r.dataset.name} {r.dataset.active_version} {what} ({source}), {grouping}, from the ledger"
    )
    for column in (unit, *REPORT_HEADER[1:]):
        table.add_column(column, justify="right")
    for days in _row_groups(outcome, per_day):
        table.add_row(*_row(outcome, days))
    return table


def _summed_over(grain: Grain) -> str:
    """What a summed row spans: a month of days, or a day of hours."""
    return "month" if grain.unit == "day" else "day"


def _row_groups(outcome: BackfillOutcome, per_day: bool) -> list[list[str]]:
    """The partitions of each row: one, or a run of consecutive unremarkable days of one month (hours of
    one day)."""
    span = len("2026-10") if outcome.request.grain.unit == "day" else len("2026-10-01")
    groups: list[list[str]] = []
    for day in outcome.request.days:
        previous = groups[-1] if groups else None
        if (
            not per_day
            and previous is not None
            and _unremarkable(outcome, day)
            and _unremarkable(outcome, previous[-1])
            and previous[-1][:span] == day[:span]
        ):
            previous.append(day)
        else:
            groups.append([day])
    return groups


def _unremarkable(outcome: BackfillOutcome, day: str) -> bool:
    shadow = outcome.validations.get(day, {})
    reached_its_end = outcome.request.dry_run or outcome.promoted_by_this_run(day)
    return bool(shadow) and bool(shadow["checks_passed"]) and reached_its_end


def _row(outcome: BackfillOutcome, days: list[str]) -> tuple[str, ...]:
    r = outcome.request
    events = [outcome.ingestions.get(day, {}) for day in days]
    shadows = [outcome.validations.get(day, {}) for day in days]

    def total(rows: list[dict], key: str) -> str:
        values = [row.get(key) for row in rows]
        return "-" if any(v is None for v in values) else f"{sum(values):,}"

    checks = _checks_cell(events[0], shadows[0])
    production = {production_label(outcome.production.get(day)) for day in days}
    promoted = outcome.promoted_by_this_run(days[0])
    verdict = "dry run" if r.dry_run else "promoted" if promoted else "[red]held back"
    unit = r.grain.unit
    label = days[0] if len(days) == 1 else f"{days[0]}…{days[-1]} ({len(days)} {unit}s)"
    return (
        label, total(events, "records"), total(events, "written"), total(events, "duplicates"),
        total(events, "quarantined"), total(shadows, "shadow_rows"), checks,
        production.pop() if len(production) == 1 else f"{len(production)} snapshots", verdict,
    )  # fmt: skip


def _checks_cell(events: dict, shadow: dict) -> str:
    """The day's verdict: the events' failed checks first (nothing can be validated on them: the root
    cause, e.g. `events: settled`), else the shadow's, else `-` when neither was checked."""
    if events and events.get("checks_passed") is False:
        return f"[red]events: {events['failed_checks']}"
    if not shadow:
        return "-"
    return "passed" if shadow["checks_passed"] else f"[red]{shadow['failed_checks']}"


# How Dagster ends a step whose blocking checks failed: the days and checks are the lines above it.
CHECK_FAILURE_ERROR = "DagsterAssetCheckFailedError"


def problem_lines(outcome: BackfillOutcome) -> list[str]:
    """`2026-10-03 quarantine_ratio 3.1% > 1%: 981 lines unknown_schema_version`, per failed day; then
    each failed step, in words when blocking checks stopped it."""
    lines = [f"{p.day} {p.check} {p.detail}" + ("" if p.blocking else " (warning)") for p in outcome.problems]
    failed_partitions = sorted({p.day for p in outcome.problems if p.blocking})
    for failure in outcome.step_failures:
        step, _, message = failure.partition(": ")
        if CHECK_FAILURE_ERROR in message and failed_partitions:
            lines.append(
                f"step {step} stopped by the blocking checks above ({', '.join(failed_partitions)}): "
                "the steps after it did not run"
            )
        else:
            lines.append(f"step {failure}")
    return lines


def partitions_before_lines(outcome: BackfillOutcome) -> list[str]:
    """Per source day read before the range by a lookback: ingested by this backfill, or read as it is.

    `impressions 2026-09-30 (read by the lookback of 2026-10-01): ingested by this run, 1,204 records,
    checks passed`, or `… read as it was, not re-derived: ingested by run …, checks passed`.
    """
    runs = outcome.runs
    lines = []
    for stream, days in outcome.request.partitions_before.items():
        for day in days:
            row = outcome.before.get((stream, day))
            what = f"{stream} {day} (read by the lookback of {outcome.request.start})"
            if row is None:
                lines.append(f"{what}: never ingested")
                continue
            verdict = "checks passed" if row["checks_passed"] else f"failed {row['failed_checks']}"
            if row["run_id"] in runs:
                lines.append(f"{what}: ingested by this run, {row['records']:,} records, {verdict}")
            else:
                lines.append(
                    f"{what}: read as it was, not re-derived (ingested by run {row['run_id']}, {verdict})"
                )
    return lines


def throughput_line(outcome: BackfillOutcome) -> str | None:
    """The events step's throughput, from the ledger rows this backfill's runs wrote: `events step
    (playback): 201,965 archive records in 38.2 s, 5,287 events/s`. None when no day of the range was
    ingested by it (the step failed before recording, or its rows are older)."""
    runs = outcome.runs
    # `ingestions` holds the range's days only (read_back).
    ours = [row for row in outcome.ingestions.values() if row["run_id"] in runs]
    if not ours:
        return None
    records = sum(row["records"] or 0 for row in ours)
    # Every day of one events run carries that run's wall time; a submitted backfill may have several runs.
    seconds = sum({row["run_id"]: row["run_seconds"] or 0.0 for row in ours}.values())
    rate = f", {records / seconds:,.0f} events/s" if seconds else ""
    return (
        f"events step ({outcome.request.stream.name}): {records:,} archive records in {seconds:.1f} s{rate}"
    )
