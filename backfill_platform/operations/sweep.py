"""`backfill-platform sweep`: does production still hold what the events imply, and what was promoted?

Two independent questions per day of production (or of a range):

- **The events' invariants.** The shadow checks `row_counts_per_bucket` and `checksums_per_bucket`
  (`pipeline/shadow/validate.py`) are run again, unchanged, on production instead of a shadow: per bucket (the
  dataset's `bucket_columns`: the day, or day and hour) the rows and reconciliation sums the events
  table implies (`expected_rows`, `reconciliation`) against production's row counts and column sums.
  A day fails when events were re-derived after its promotion, when an adopted (unvalidated) day is
  wrong, or when someone changed the rows.
- **The fingerprint.** Production's (rows, row hash sum) of the day against the shadow fingerprint the
  ledger recorded for the validation production published: any change behind the platform's back,
  including in columns no reconciliation rule covers.

Divergent days are grouped into contiguous spans, each with the `backfill` command that re-derives it.
Production and the events are read at pinned snapshots, so all figures describe the same state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from rich.table import Table

from backfill_platform.lakehouse.resources import open_catalog
from backfill_platform.lakehouse.snapshots import current_snapshot_id
from backfill_platform.lakehouse.tables import in_range, read_at, table_exists
from backfill_platform.operations.explain import describe
from backfill_platform.operations.ledger_view import (
    Row,
    in_production,
    ledger_rows,
    production_label,
)
from backfill_platform.pipeline.events.ingest import events_table
from backfill_platform.pipeline.partitions import days_between
from backfill_platform.pipeline.shadow.validate import CHECKSUMS, ROW_COUNTS, checksum_check, row_count_check
from backfill_platform.pipeline.tables.dataset_tables import (
    production_table,
    read_range,
    with_declared_columns,
)
from backfill_platform.pipeline.validation.buckets import (
    actual_figures,
    events_figures,
    partition_fingerprints,
)
from backfill_platform.pipeline.validation.checksums import Fingerprint
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.durations import DAY, day_bounds
from backfill_platform.specs.stream import StreamSpec


@dataclass
class DaySweep:
    """One day of production against its events and against its ledger record."""

    day: date
    rows: int
    expected_rows: int
    sums: dict[str, tuple[int, int]]  # column -> (production, events imply)
    fingerprint: Fingerprint  # production's
    recorded: Row | None  # the ledger row production holds for the day
    problems: list[str] = field(default_factory=list)

    @property
    def divergent(self) -> bool:
        return bool(self.problems)


@dataclass
class Sweep:
    dataset: DatasetSpec
    production_snapshot: int | None
    events_snapshot: int | None
    days: list[DaySweep]

    @property
    def divergent(self) -> list[date]:
        return [d.day for d in self.days if d.divergent]

    @property
    def spans(self) -> list[tuple[date, date]]:
        """Contiguous runs of divergent days as [start, end) ranges (end exclusive, as the CLI's)."""
        spans: list[tuple[date, date]] = []
        for day in self.divergent:
            if spans and spans[-1][1] == day:
                spans[-1] = (spans[-1][0], day + DAY)
            else:
                spans.append((day, day + DAY))
        return spans

    def commands(self) -> list[str]:
        return [
            f"backfill-platform backfill --dataset {self.dataset.name} --start {start} --end {end}"
            for start, end in self.spans
        ]


def fingerprint_problem(fingerprint: Fingerprint, recorded: Row | None) -> str | None:
    """How production's fingerprint of a day differs from what the ledger recorded at promotion."""
    if recorded is None:
        if fingerprint.rows == 0:
            return None
        return f"{fingerprint.rows:,} rows the ledger never recorded a promotion or adoption of"
    promoted = Fingerprint.recorded(recorded, "shadow")
    if promoted is None or fingerprint == promoted:
        return None  # unchanged, or recorded before fingerprints were: nothing to compare with
    return (
        f"changed behind the platform's back: {fingerprint.rows:,} rows (hash sum {fingerprint.row_hash}), "
        f"the ledger recorded {promoted.rows:,} rows (hash sum {promoted.row_hash}) at snapshot "
        f"{recorded['promoted_snapshot_id']}"
    )


def sweep(
    spark: SparkSession,
    spec: DatasetSpec,
    stream: StreamSpec,
    start: date | None = None,
    end: date | None = None,
    step: Callable[[str], None] = lambda _message: None,
) -> Sweep:
    """Sweep production's days (those it holds or the ledger says it holds), or every day of
    [start, end); `step(message)` is told what runs next (a status line)."""
    target, source = production_table(spark, spec), events_table(spark, stream)
    if not table_exists(spark, target):
        raise ValueError(f"production {target} does not exist: nothing was promoted to {spec.name} yet")
    if not table_exists(spark, source):
        raise ValueError(f"{source} does not exist: the events of {stream.name} were never materialized")
    step("reading the ledger")
    recorded = in_production(ledger_rows(open_catalog(), spec.name))
    production_snapshot = current_snapshot_id(spark, target)
    events_snapshot = current_snapshot_id(spark, source)
    if start is not None and end is not None:
        production = read_range(spark, target, spec, start, end, production_snapshot)
        step(f"production's figures per bucket, {start} to {end} (exclusive)")
        actual = actual_figures(production, spec)
        days = days_between(start, end)
    else:
        step("production's figures per bucket, all days")
        production = with_declared_columns(read_at(spark, target, production_snapshot), spec)
        actual = actual_figures(production, spec)
        days = sorted({date.fromisoformat(b[0]) for b in actual} | set(recorded))
    if not days:
        return Sweep(spec, production_snapshot, events_snapshot, [])
    names = [d.isoformat() for d in days]
    step(f"what the events imply for {len(days)} day(s)")
    events = (
        read_at(spark, source, events_snapshot)
        .where(in_range("event_time", *day_bounds(days[0], days[-1])))
        .where(F.to_date("event_time").isin(days))
    )
    expected, _ = events_figures(events, spec, names)
    step("production's fingerprint per day")
    fingerprints = partition_fingerprints(production, spec, days)
    verdicts = {
        (v.check, v.day): v
        for v in [*row_count_check(names, expected, actual), *checksum_check(spec, names, expected, actual)]
    }
    result = []
    for day, name in zip(days, names, strict=True):
        figures = [f for b, f in actual.items() if b[0] == name]
        wanted = [f for b, f in expected.items() if b[0] == name]
        swept = DaySweep(
            day=day,
            rows=sum(f.rows for f in figures),
            expected_rows=sum(f.rows for f in wanted),
            sums={
                r.column: (sum(f.sums[r.column] for f in figures), sum(f.sums[r.column] for f in wanted))
                for r in spec.reconciliation
            },
            fingerprint=fingerprints[name],
            recorded=recorded.get(day),
        )
        for check in (ROW_COUNTS, CHECKSUMS):
            verdict = verdicts[(check, name)]
            if not verdict.passed:
                plain = {k: getattr(v, "value", v) for k, v in verdict.metadata.items()}
                swept.problems.append(f"{check}: {describe(check, plain, bucket=spec.bucket)}")
        if problem := fingerprint_problem(fingerprints[name], swept.recorded):
            swept.problems.append(f"fingerprint: {problem}")
        result.append(swept)
    return Sweep(spec, production_snapshot, events_snapshot, result)


def sweep_table(result: Sweep) -> Table:
    """One row per day: production's rows and sums against the events, and its fingerprint."""
    spec = result.dataset
    table = Table(
        title=f"{spec.name}: production @ {result.production_snapshot} against the events "
        f"@ {result.events_snapshot} and the ledger"
    )
    for column in ("day", "production rows", "events imply"):
        table.add_column(column, justify="right")
    for rule in spec.reconciliation:
        table.add_column(f"{rule.column} (prod / events)", justify="right")
    for column in ("fingerprint", "production (ledger)", "verdict"):
        table.add_column(column)
    for d in result.days:
        sums = [f"{got:,} / {want:,}" for got, want in d.sums.values()]
        changed = any(p.startswith("fingerprint") for p in d.problems)
        table.add_row(
            d.day.isoformat(), f"{d.rows:,}", f"{d.expected_rows:,}", *sums,
            "[red]differs" if changed else "as recorded", production_label(d.recorded),
            "[red]divergent" if d.divergent else "[green]ok",
        )  # fmt: skip
    return table
