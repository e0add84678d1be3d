"""`backfill-platform plan`: what a backfill of a range would read and redo, before anything runs.

Per event-time partition (a day, or an hour of an hourly stream): the read window (the partition widened
by the stream's clock skew before and its allowed lateness after, as `hour_mapping.ReadWindow` reads it),
the archive files, bytes and lines in it, the ingestion hours it needs that have no file, and what
production holds for it according to the ledger. A dataset whose days are rolled up from an hourly
stream (UTC days, or a time zone's days of 23 to 25 hours) is planned by its own days, each with the hours
it spans. What plan did not read it says so: a table archive's Kafka offsets are read by the run.
Lines are counted by stream-decompressing each file once (files shared by neighbouring windows are
read once), in bounded memory. No Spark session is started and no table is read but the ledger.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime

from rich.table import Table

from backfill_platform import settings
from backfill_platform.lakehouse.resources import open_catalog
from backfill_platform.operations.ledger_view import (
    Row,
    events_throughput,
    in_production,
    ingestion_rows,
    latest,
    ledger_rows,
    production_label,
)
from backfill_platform.operations.number_sample import NumberSample, sample_numbers
from backfill_platform.operations.ranges import bound, option_text
from backfill_platform.operations.terminal import shown
from backfill_platform.pipeline.archive.boundary import REFUSED, is_refusal
from backfill_platform.pipeline.archive.listing import (
    ArchiveFile,
    LocalArchive,
    UnlistedFile,
    list_files,
)
from backfill_platform.pipeline.archive.opening import S3ReadConfig, decompressed, open_archive_file
from backfill_platform.pipeline.archive.records import RecordFormat, iter_records
from backfill_platform.pipeline.archive.stream_archive import archive_for
from backfill_platform.pipeline.erasure.subjects import erasure_coverage
from backfill_platform.pipeline.events.completeness import (
    OFFSETS_NOT_READ,
    completeness,
    format_hours,
    proves_by_offsets,
    topic_edges_lookup,
)
from backfill_platform.pipeline.hour_mapping import ReadPlan, ReadWindow
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.durations import format_duration
from backfill_platform.specs.grain import Grain
from backfill_platform.specs.stream import StreamSpec

CHUNK = 1 << 20


@dataclass
class PartitionPlan:
    """What one event-time partition (a day, or an hour) would read, what its window lacks, and what
    production holds for it."""

    key: str  # its partition key: `2026-10-01`, or `2026-10-01-14:00` for an hour
    window: tuple[datetime, datetime]
    files: list[ArchiveFile]
    lines: int
    missing_hours: list[datetime]
    settles_at: datetime
    offset_gaps: list[str] = field(default_factory=list)  # Kafka Connect archives: missing offsets
    proof: str = "ingestion hours"  # what proves the window whole (completeness.PartitionCompleteness.proof)
    production: dict[str, Row | None] = field(default_factory=dict)  # dataset -> its ledger row
    # A partition before the range that a dataset's lookback reads: its latest ingestion (None: never)
    lookback_only: bool = False
    ingestion: Row | None = None
    # A dataset's day rolled up from the stream's hours: how many UTC hours it spans (23, 24 or 25).
    spans: int | None = None

    @property
    def bytes(self) -> int:
        return sum(f.size for f in self.files)


@dataclass
class Plan:
    stream: StreamSpec
    datasets: list[DatasetSpec]
    partitions: list[PartitionPlan]  # in order, those a lookback reads before the range first
    files: int  # distinct files over the range (neighbouring windows share files)
    bytes: int
    lines: int
    unreadable: list[str]  # files whose gzip stream is corrupt: counted up to the damage
    throughput: tuple[float, int] | None  # (events/s, runs) measured by earlier events runs
    numbers: NumberSample | None = None  # non-standard numbers (NaN, Infinity) in a sample of records
    # Entries below the archive root refused at its boundary (links leading out, special or unreadable
    # files): never read by any window, named here so that nobody mistakes them for an empty hour.
    refused: list[UnlistedFile] = field(default_factory=list)
    clipped: str | None = None  # how the range was bounded by what the stream holds (`held_range`)
    # The dataset grain the stream's hours are rolled up into (its days, UTC or local); None: the stream's.
    grain: Grain | None = None

    @property
    def estimated_seconds(self) -> float | None:
        return self.lines / self.throughput[0] if self.throughput else None

    @property
    def noun(self) -> str:
        """What one of its partitions is: `day`, or `hour` for an hourly stream not rolled up into days."""
        return (self.grain or self.stream.grain).unit


def count_records(path: str, fmt: RecordFormat, reader: S3ReadConfig | None = None) -> tuple[int, bool]:
    """(records, intact) of a file as the ingestion reads it: lines of `jsonl` counted on the raw
    bytes (fast), rows of Parquet from its footer, the other formats by reading their records."""
    if fmt.name == "jsonl":
        return count_lines(path, reader)
    if fmt.name == "parquet":
        import pyarrow.parquet as pq

        with open_archive_file(path, reader) as raw:
            try:
                return pq.ParquetFile(raw).metadata.num_rows, True
            except Exception:  # a corrupt footer: the ingestion quarantines the file as one record
                return 1, False
    count, intact = 0, True
    for record in iter_records(path, fmt, reader):
        count += 1
        intact = intact and record[3] != "unreadable_file"
    return count, intact


def count_lines(path: str, reader: S3ReadConfig | None = None) -> tuple[int, bool]:
    """(lines, intact) of a file (a local path or an `s3://` URI), gzip recognised by its magic bytes
    as the ingestion does; a final newline does not start a line. A corrupt stream counts the lines
    before the damage plus the one record the ingestion quarantines as `unreadable_file`."""
    lines, last = 0, b"\n"
    with open_archive_file(path, reader) as raw:
        stream = decompressed(raw)
        try:
            while block := stream.read(CHUNK):
                lines += block.count(b"\n")
                last = block[-1:]
        except (EOFError, OSError, zlib.error):
            return lines + 1, False
    return lines + (last != b"\n"), True


def build_plan(
    stream: StreamSpec,
    datasets: list[DatasetSpec],
    start: date | datetime,
    end: date | datetime,
    on_file: Callable[[ArchiveFile, int], None] = lambda _file, _total: None,
    read_from: date | datetime | None = None,
    days_of: Grain | None = None,
) -> Plan:
    """The plan of the partitions of `stream` (days, or hours of an hourly stream) in [start, end), a day
    given as a date standing for the instant it starts. `on_file(file, total bytes of the range)` is
    called after each file is counted (a progress bar). `read_from` (before `start`): where a dataset's lookback starts reading; the
    partitions [read_from, start) are planned too, marked as read by the lookback. `days_of`: a dataset's
    grain of days over an hourly stream; the range's hours are then planned as those days (`roll_up`)."""
    grain = stream.grain
    first, after = bound(grain, start), bound(grain, end)
    if after <= first:
        raise ValueError(
            f"empty range: --start {option_text(grain, first)} must be before --end "
            f"{option_text(grain, after)} (exclusive)"
        )
    first, after, clipped = held_range(stream, first, after)
    if not grain.keys_between(first, after):
        raise ValueError(
            f"empty range: --start {option_text(grain, first)} must be before --end "
            f"{option_text(grain, after)} (exclusive)"
        )
    # Floored: a New York day starts inside a UTC day, which it reads.
    # A lookback reads no further back than the stream's first partition either.
    lookback = max(bound(grain, read_from or first), grain.floor(bound(grain, stream.first_partition)))
    keys = grain.keys_between(grain.floor(min(lookback, first)), after)
    archive = archive_for(stream)
    read = ReadPlan.for_partitions(stream, keys)
    files = list_files(archive, read.window.low, read.window.high)
    counted, unreadable = count_files(stream, files, on_file)
    # What each file holds of its Kafka offsets: its records, the damage record of an unreadable one not.
    held = {f.name: counted[f.name] - (f.name in unreadable) for f in files}
    status = completeness(stream, read, files, settings.now(), held, edges=topic_edges_lookup(stream))
    catalog = open_catalog()
    production = {d.name: in_production(ledger_rows(catalog, d.name)) for d in datasets}
    dataset_grains = {d.name: d.grain for d in datasets}
    ingestions = ingestion_rows(catalog, stream.name)
    latest_ingestion = latest(ingestions)
    by_hour: dict[datetime, list[ArchiveFile]] = {}
    for f in files:
        by_hour.setdefault(f.ingestion_hour, []).append(f)
    partitions = []
    for key in keys:
        window = read.partitions[key]
        # What a run of this partition alone lists: whole hours, the first one floored (`listing.hours`).
        window_files = [f for hour in window.hours() for f in by_hour.get(hour, [])]
        partitions.append(
            PartitionPlan(
                key=key,
                window=(window.low, window.high),
                files=window_files,
                lines=sum(counted[f.name] for f in window_files),
                missing_hours=status[key].missing_hours,
                settles_at=status[key].horizon,
                offset_gaps=status[key].gaps,
                proof=status[key].proof,
                # The dataset's partition holding this one (the day of an hour).
                production={
                    name: rows.get(dataset_grains[name].key(grain.start(key)))
                    for name, rows in production.items()
                },
                lookback_only=grain.start(key) < first,
                ingestion=latest_ingestion.get(key),
            )
        )
    rolled = days_of is not None and days_of != grain and grain.unit == "hour"
    if rolled:
        partitions = roll_up(partitions, days_of, first, after, counted)
    return Plan(
        stream=stream,
        datasets=datasets,
        partitions=partitions,
        files=len(files),
        bytes=sum(f.size for f in files),
        lines=sum(counted.values()),
        unreadable=unreadable,
        throughput=events_throughput(ingestions),
        numbers=sample_numbers(stream, [f for f in files if f.rows is None]),
        refused=refused_entries(stream, archive),
        clipped=clipped,
        grain=days_of if rolled else None,
    )


def roll_up(
    hours: list[PartitionPlan], days: Grain, first: datetime, after: datetime, counted: dict[str, int]
) -> list[PartitionPlan]:
    """The hours of the range as the dataset's days in [first, after) (`days`: UTC or a time zone's), each
    with the UTC hours it overlaps, as the dataset's partition mapping reads them (`SourceWindowMapping`):
    23, 24 or 25 in New York. A day reads the union of its hours' read windows: its files are counted once
    (neighbouring hours share files, so summing the hours' own figures would count most files several
    times), its missing hours and offset gaps are its hours', and it settles with its last hour. Hours
    before the range that a lookback reads stay hours (each is read whole, not as part of a day)."""
    rolled = [h for h in hours if h.lookback_only]
    own = [h for h in hours if not h.lookback_only]
    hourly = Grain("hour")
    for key in days.keys_between(first, after):
        low, high = days.bounds(key)
        members = [h for h in own if hourly.start(h.key) < high and low < hourly.end(hourly.start(h.key))]
        if not members:
            continue
        files = list({f.name: f for m in members for f in m.files}.values())
        rolled.append(
            PartitionPlan(
                key=key,
                window=(min(m.window[0] for m in members), max(m.window[1] for m in members)),
                files=files,
                # As each hour counts its lines (`build_plan`): every record of each file read.
                lines=sum(counted.get(f.name, 0) for f in files),
                missing_hours=sorted({h for m in members for h in m.missing_hours}),
                settles_at=max(m.settles_at for m in members),
                offset_gaps=list(dict.fromkeys(g for m in members for g in m.offset_gaps)),
                proof=" | ".join(dict.fromkeys(m.proof for m in members)),
                # Each hour names the dataset day it starts in: one starting inside this day names it.
                production=next((m for m in members if low <= hourly.start(m.key)), members[0]).production,
                spans=len(members),
            )
        )
    return rolled


def held_range(stream: StreamSpec, first: datetime, after: datetime) -> tuple[datetime, datetime, str | None]:
    """[first, after) bounded by what the stream can hold: from its first partition (`first_partition`) to
    the partition of now (later ones have no ingestion hour yet), and the note that says so when it bounded
    anything. A range that holds none of them is refused: planning 1970 to 2199 lists what exists, not
    two million empty hours."""
    grain = stream.grain
    held_from, held_to = grain.floor(bound(grain, stream.first_partition)), grain.ceil(settings.now())
    low, high = max(first, held_from), min(after, held_to)
    if high <= low:
        raise ValueError(
            f"{stream.name} holds no {grain.unit} in --start {option_text(grain, first)} to --end "
            f"{option_text(grain, after)}: its {grain.plural} run from {option_text(grain, held_from)} "
            f"(first_partition) to {option_text(grain, held_to)} (now, exclusive)"
        )
    if (low, high) == (first, after):
        return first, after, None
    note = (
        f"planned {option_text(grain, low)} to {option_text(grain, high)} (exclusive): what {stream.name} "
        f"holds of the range (from first_partition to now)"
    )
    return low, high, note


def count_files(
    stream: StreamSpec, files: list[ArchiveFile], on_file: Callable[[ArchiveFile, int], None]
) -> tuple[dict[str, int], list[str]]:
    """(records per file name, the names of unreadable files): an hour of a table archive's rows from the
    table's metadata, a file's records by reading it (`count_records`); `on_file` after each."""
    counted: dict[str, int] = {}
    unreadable: list[str] = []
    total = sum(f.size for f in files)
    for f in files:
        if f.rows is not None:
            counted[f.name] = f.rows
        else:
            counted[f.name], intact = count_records(f.path, RecordFormat.of(stream.archive), f.reader)
            if not intact:
                unreadable.append(f.name)
        on_file(f, total)
    return counted, unreadable


def lookback_start(dataset: DatasetSpec, stream: StreamSpec, first: date | datetime) -> datetime | None:
    """Where the lookback of the range's first partition (`first`: its start, or its day) starts reading
    `stream`, in whole partitions and never before the stream's first one; None when the dataset reads it
    without a lookback."""
    grain = stream.grain
    back = max((i.partitions_back(grain) for i in dataset.inputs if i.stream == stream.name), default=0)
    if not back:
        return None
    reads_from = grain.start(grain.shift(grain.key(bound(grain, first)), -back))
    return max(reads_from, grain.start(stream.first_partition))


def refused_entries(stream: StreamSpec, archive: object) -> list[UnlistedFile]:
    """The local archive's entries refused at its boundary (an object store has no links or devices)."""
    if not isinstance(archive, LocalArchive):
        return []
    first_hour = ReadWindow.of(stream, *stream.grain.bounds(stream.first_partition)).first_hour
    scan = archive.unlisted_files(first_hour, count=False)
    return [f for f in scan if is_refusal(f.why)]


def plan_table(plan: Plan) -> Table:
    """One row per partition: window, files, bytes, lines, missing hours, production per dataset."""
    s, noun = plan.stream, plan.noun
    # A day rolled up from hours reads each of its hours' windows: the title says what an hour reads.
    reader = "hour" if plan.grain else noun
    title = (
        f"plan for {s.name}: each {reader} reads ingestion hours [{reader} - {format_duration(s.clock_skew)} "
        f"skew - 1h, {reader} end + {format_duration(s.allowed_lateness)} lateness + 1h)"
    )
    if plan.grain:
        title += f"; each day ({plan.grain.zone}) reads the UTC hours it spans, its figures over their files"
    table = Table(title=title)
    # What proves a partition complete: its ingestion hours, or the offsets of a Kafka Connect archive.
    missing_column = "missing Kafka offsets" if proves_by_offsets(s) else "missing ingestion hours"
    # A table archive's "files" are its ingestion hours holding rows, its lines its rows (from metadata).
    files, lines = ("hours", "rows") if s.archive.iceberg_table else ("files", "lines")
    spans = ("UTC hours",) if plan.grain else ()
    for column in (noun, *spans, "read window (UTC)", files, "bytes", lines, missing_column):
        table.add_column(column, justify="left" if column.startswith(("read", "missing")) else "right")
    for d in plan.datasets:
        table.add_column(f"{d.name} in production")
    for p in plan.partitions:
        window = f"{p.window[0]:%m-%d %H:%M} → {p.window[1]:%m-%d %H:%M}"
        missing = f"[red]{format_hours(p.missing_hours)}" if p.missing_hours else "none"
        if proves_by_offsets(s):
            missing = f"[red]{len(p.offset_gaps)} gap(s)" if p.offset_gaps else "none"
            if OFFSETS_NOT_READ in p.proof and not p.offset_gaps:
                # A table archive's offsets are in its rows, which plan does not read: never "none".
                missing = f"[yellow]{OFFSETS_NOT_READ}"
        label = f"{p.key} (lookback)" if p.lookback_only else p.key
        hours_spanned = (str(p.spans) if p.spans else "-",) if plan.grain else ()
        table.add_row(
            label, *hours_spanned, window, f"{len(p.files):,}", f"{p.bytes:,}", f"{p.lines:,}", missing,
            *("(read only)" if p.lookback_only else production_label(p.production[d.name]) for d in plan.datasets),
        )  # fmt: skip
    return table


def plan_summary(plan: Plan) -> list[str]:
    """The totals, the estimate (or why there is none) and what would block the run."""
    lines = [totals_line(plan)]
    if plan.clipped:
        lines.append(plan.clipped)
    if plan.unreadable:
        lines.append(f"[red]unreadable (corrupt gzip): {', '.join(map(shown, plan.unreadable))}")
    if plan.refused:
        lines.append(
            f"[red]{len(plan.refused)} entr{'y' if len(plan.refused) == 1 else 'ies'} below the archive root "
            f"{REFUSED.removesuffix(': ')}: "
            + "; ".join(f"{shown(f.name)} ({f.why.removeprefix(REFUSED)})" for f in plan.refused)
        )
    if plan.throughput:
        rate, runs = plan.throughput
        lines.append(
            f"estimated events step: {plan.estimated_seconds:,.0f} s at {rate:,.0f} lines/s "
            f"(measured by {runs} earlier events run(s) in platform.ingestions); the shadow, checks "
            "and promotion steps are not timed in the ledger, nor is the Spark start"
        )
    else:
        lines.append("no estimate: no events run of this stream has recorded its duration in the ledger yet")
    advice = plan.numbers.advice(plan.stream) if plan.numbers else None
    if advice:
        lines.append(advice)
    coverage = erasure_coverage(plan.stream)
    lines.append(coverage if plan.stream.subject_field else f"[yellow]{coverage}")
    return lines + lookback_lines(plan) + blocker_lines(plan)


def totals_line(plan: Plan) -> str:
    """How much the range reads in all (neighbouring read windows share files, so this is no sum)."""
    count, noun, table = len(plan.partitions), plan.noun, plan.stream.archive.iceberg_table
    if table:
        return (
            f"{count} {noun}(s) read {plan.lines:,} rows of table {table} in {plan.files:,} ingestion hours, "
            f"{plan.bytes:,} bytes (from the table's metadata; neighbouring windows share hours: per-{noun} "
            "figures overlap)"
        )
    return (
        f"{count} {noun}(s) read {plan.files:,} distinct archive files, {plan.bytes:,} bytes, "
        f"{plan.lines:,} lines (neighbouring windows share files: per-{noun} figures overlap)"
    )


def blocker_lines(plan: Plan) -> list[str]:
    """The partitions that would fail their `settled` check, how completeness is proven, and the
    partitions not settled yet."""
    lines, noun = [], plan.noun
    holes = [p for p in plan.partitions if p.missing_hours]
    if holes:
        lines.append(
            f"[red]{len(holes)} {noun}(s) have missing ingestion hours and would fail their `settled` check: "
            + ", ".join(p.key for p in holes)
        )
    gapped = [p for p in plan.partitions if p.offset_gaps]
    if gapped:
        lines.append(
            f"[red]{len(gapped)} {noun}(s) have missing Kafka offsets and would fail their `settled` check: "
            + "; ".join(f"{p.key}: {p.offset_gaps[0]}" for p in gapped)
        )
    proofs = sorted(
        {proof for p in plan.partitions for proof in p.proof.split(" | ")}
        - {"ingestion hours", OFFSETS_NOT_READ}
    )
    if proofs:
        lines.append("completeness proven by " + " | ".join(proofs))
    unread = [p.key for p in plan.partitions if OFFSETS_NOT_READ in p.proof]
    if unread:
        lines.append(
            f"[yellow]Kafka offsets of table {plan.stream.archive.iceberg_table}: not read by plan for "
            f"{len(unread)} {noun}(s), so nothing is proven about them here (rows deleted from the table "
            f"show only as fewer rows); each run's `settled` check reads them and fails a {noun} that lacks any"
        )
    unsettled = [p for p in plan.partitions if p.settles_at > settings.now()]
    if unsettled:
        lines.append(
            f"{len(unsettled)} {noun}(s) are not settled yet (lateness horizon ahead): "
            + ", ".join(f"{p.key} at {p.settles_at:%Y-%m-%d %H:%M}" for p in unsettled)
        )
    return lines


def lookback_lines(plan: Plan) -> list[str]:
    """What a dataset backfill does with each partition before the range its lookback reads."""
    lines = []
    for p in (p for p in plan.partitions if p.lookback_only):
        row = p.ingestion
        what = f"{plan.stream.name} {p.key} is read by the lookback of the range's first {plan.noun}: "
        if row is None:
            lines.append(what + "never ingested, the backfill ingests it in the same run")
        elif not row["checks_passed"] or row.get("provisional"):
            state = "provisional" if row["checks_passed"] else f"failed {row['failed_checks']}"
            lines.append(what + f"ingested by run {row['run_id']} ({state}), the backfill ingests it again")
        else:
            lines.append(
                what + f"ingested by run {row['run_id']} (checks passed), the backfill re-reads it and "
                "re-derives it only if a file of its read window changed since"
            )
    return lines
