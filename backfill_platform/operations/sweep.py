"""`backfill-platform sweep`: does production still hold what the events imply, and what was promoted?

Two independent questions per partition of production (or of a range), a day or an hour of an hourly
dataset:

- **The events' invariants.** The shadow checks `row_counts_per_bucket` and `checksums_per_bucket`
  (`pipeline/shadow/checks.py`, their verdicts in `pipeline/validation/bucket_verdicts.py`) are run again,
  unchanged, on production instead of a shadow: per bucket (the dataset's `bucket_columns`: the
  partition, or day and hour) the rows and reconciliation sums the events table implies (`expected_rows`,
  `reconciliation`) against production's row counts and column sums.
  A partition fails when events were re-derived after its promotion, when an adopted (unvalidated) day
  is wrong, or when someone changed the rows.
- **The fingerprint.** Production's (rows, row hash sum) of the partition against the shadow fingerprint
  the ledger recorded for the validation production published: any change behind the platform's back,
  including in columns no reconciliation rule covers.

Divergent partitions are grouped into contiguous spans, each with the `backfill` command that re-derives
it. Production and the events are read at pinned snapshots, so all figures describe the same state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime

from pyspark.sql import DataFrame, SparkSession
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
from backfill_platform.operations.ranges import bound, option_text
from backfill_platform.pipeline.names import events_table, production_table
from backfill_platform.pipeline.partitions import partition_of
from backfill_platform.pipeline.shadow.checks import CHECKSUMS, ROW_COUNTS
from backfill_platform.pipeline.tables.dataset_tables import read_range, with_declared_columns
from backfill_platform.pipeline.validation.bucket_verdicts import checksum_verdicts, row_count_verdicts
from backfill_platform.pipeline.validation.buckets import (
    Bucket,
    BucketFigures,
    actual_figures,
    events_figures,
)
from backfill_platform.pipeline.validation.fingerprints import Fingerprint, dataset_table_fingerprints
from backfill_platform.pipeline.validation.verdicts import PartitionVerdict
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.grain import Grain
from backfill_platform.specs.stream import StreamSpec


@dataclass
class PartitionSweep:
    """One partition of production (a day, or an hour) against its events and its ledger record."""

    key: str
    rows: int
    expected_rows: int
    sums: dict[str, tuple[int, int]]  # column -> (production, events imply)
    fingerprint: Fingerprint  # production's
    recorded: Row | None  # the ledger row production holds for the partition
    problems: list[str] = field(default_factory=list)

    @property
    def divergent(self) -> bool:
        return bool(self.problems)


@dataclass
class Sweep:
    dataset: DatasetSpec
    production_snapshot: int | None
    events_snapshot: int | None
    partitions: list[PartitionSweep]

    @property
    def divergent(self) -> list[str]:
        return [p.key for p in self.partitions if p.divergent]

    @property
    def spans(self) -> list[tuple[datetime, datetime]]:
        """Contiguous runs of divergent partitions as [start, end) instants (end exclusive, as the CLI's)."""
        grain = self.dataset.grain
        spans: list[tuple[datetime, datetime]] = []
        for start in map(grain.start, self.divergent):
            if spans and spans[-1][1] == start:
                spans[-1] = (spans[-1][0], grain.end(start))
            else:
                spans.append((start, grain.end(start)))
        return spans

    def commands(self) -> list[str]:
        grain = self.dataset.grain
        return [
            f"backfill-platform backfill --dataset {self.dataset.name} --start {option_text(grain, start)} "
            f"--end {option_text(grain, end)}"
            for start, end in self.spans
        ]


def fingerprint_problem(fingerprint: Fingerprint, recorded: Row | None) -> str | None:
    """How production's fingerprint of a partition differs from what the ledger recorded at promotion."""
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
    start: date | datetime | None = None,
    end: date | datetime | None = None,
    step: Callable[[str], None] = lambda _message: None,
) -> Sweep:
    """Sweep production's partitions (those it holds or the ledger says it holds), or every partition
    (day, or hour of an hourly dataset) of [start, end), a day given as a date standing for the instant
    it starts; `step(message)` is told what runs next (a status line)."""
    target, source = production_table(spark, spec), events_table(spark, stream)
    if not table_exists(spark, target):
        raise ValueError(f"production {target} does not exist: nothing was promoted to {spec.name} yet")
    if not table_exists(spark, source):
        raise ValueError(f"{source} does not exist: the events of {stream.name} were never materialized")
    step("reading the ledger")
    recorded = in_production(ledger_rows(open_catalog(), spec.name))
    production_snapshot = current_snapshot_id(spark, target)
    events_snapshot = current_snapshot_id(spark, source)
    grain = spec.grain
    production = read_production(spark, target, spec, production_snapshot, start, end, step)
    actual = actual_figures(production, spec)
    if start is not None and end is not None:
        keys = grain.keys_between(bound(grain, start), bound(grain, end))
    else:
        keys = sorted({bucket[0] for bucket in actual} | set(recorded))
    if not keys:
        return Sweep(spec, production_snapshot, events_snapshot, [])
    step(f"what the events imply for {len(keys)} {grain.unit}(s)")
    expected = implied_figures(spark, source, events_snapshot, spec, keys)
    step(f"production's fingerprint per {grain.unit}")
    fingerprints = dataset_table_fingerprints(production, spec, keys)
    verdicts = {
        (v.check, v.partition): v
        for v in [
            *row_count_verdicts(ROW_COUNTS, keys, expected, actual),
            *checksum_verdicts(CHECKSUMS, spec, keys, expected, actual),
        ]
    }
    swept = []
    for key in keys:
        partition = partition_sweep(spec, key, actual, expected, fingerprints[key], recorded.get(key))
        partition.problems += check_problems(spec, key, verdicts) + fingerprint_problems(partition)
        swept.append(partition)
    return Sweep(spec, production_snapshot, events_snapshot, swept)


def read_production(
    spark: SparkSession,
    target: str,
    spec: DatasetSpec,
    snapshot: int | None,
    start: date | datetime | None,
    end: date | datetime | None,
    step: Callable[[str], None],
) -> DataFrame:
    """Production at `snapshot`: its partitions in [start, end), or all of it without a range."""
    grain = spec.grain
    if start is None or end is None:
        step(f"production's figures per bucket, all {grain.plural}")
        return with_declared_columns(read_at(spark, target, snapshot), spec)
    first, after = bound(grain, start), bound(grain, end)
    step(
        f"production's figures per bucket, {option_text(grain, first)} to {option_text(grain, after)} (exclusive)"
    )
    return read_range(spark, target, spec, first, after, snapshot)


def implied_figures(
    spark: SparkSession, source: str, snapshot: int | None, spec: DatasetSpec, keys: list[str]
) -> dict[Bucket, BucketFigures]:
    """What the events at `snapshot` imply per bucket of the partitions `keys`."""
    grain = spec.grain
    events = (
        read_at(spark, source, snapshot)
        .where(in_range("event_time", *grain.bounds(keys[0], keys[-1])))
        .where(partition_of(grain, "event_time").isin(partition_values(grain, keys)))
    )
    return events_figures(events, spec, keys)[0]


def partition_values(grain: Grain, keys: list[str]) -> list[date] | list[str]:
    """What `partitions.partition_of` gives the partitions `keys`: a day's date, an hour's key."""
    return [grain.day_of(key) for key in keys] if grain.unit == "day" else keys


def partition_sweep(
    spec: DatasetSpec,
    key: str,
    actual: dict[Bucket, BucketFigures],
    expected: dict[Bucket, BucketFigures],
    fingerprint: Fingerprint,
    recorded: Row | None,
) -> PartitionSweep:
    """One partition's figures summed over its buckets: production's, and what the events imply."""
    figures = [f for b, f in actual.items() if b[0] == key]
    wanted = [f for b, f in expected.items() if b[0] == key]
    return PartitionSweep(
        key=key,
        rows=sum(f.rows for f in figures),
        expected_rows=sum(f.rows for f in wanted),
        sums={
            r.column: (sum(f.sums[r.column] for f in figures), sum(f.sums[r.column] for f in wanted))
            for r in spec.reconciliation
        },
        fingerprint=fingerprint,
        recorded=recorded,
    )


def check_problems(
    spec: DatasetSpec, key: str, verdicts: dict[tuple[str, str], PartitionVerdict]
) -> list[str]:
    """The shadow checks a partition of production fails, each with why."""
    problems = []
    for check in (ROW_COUNTS, CHECKSUMS):
        verdict = verdicts[(check, key)]
        if not verdict.passed:
            plain = {k: getattr(v, "value", v) for k, v in verdict.metadata.items()}
            why = describe(check, plain, bucket=spec.bucket, partition=spec.grain.unit)
            problems.append(f"{check}: {why}")
    return problems


def fingerprint_problems(partition: PartitionSweep) -> list[str]:
    problem = fingerprint_problem(partition.fingerprint, partition.recorded)
    return [f"fingerprint: {problem}"] if problem else []


def sweep_table(result: Sweep) -> Table:
    """One row per partition: production's rows and sums against the events, and its fingerprint."""
    spec = result.dataset
    table = Table(
        title=f"{spec.name}: production @ {result.production_snapshot} against the events "
        f"@ {result.events_snapshot} and the ledger"
    )
    for column in (spec.grain.unit, "production rows", "events imply"):
        table.add_column(column, justify="right")
    for rule in spec.reconciliation:
        table.add_column(f"{rule.column} (prod / events)", justify="right")
    for column in ("fingerprint", "production (ledger)", "verdict"):
        table.add_column(column)
    for p in result.partitions:
        sums = [f"{got:,} / {want:,}" for got, want in p.sums.values()]
        changed = any(problem.startswith("fingerprint") for problem in p.problems)
        table.add_row(
            p.key, f"{p.rows:,}", f"{p.expected_rows:,}", *sums,
            "[red]differs" if changed else "as recorded", production_label(p.recorded),
            "[red]divergent" if p.divergent else "[green]ok",
        )  # fmt: skip
    return table
