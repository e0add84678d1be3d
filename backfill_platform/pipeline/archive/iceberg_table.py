"""An archive that is an Iceberg table (`archive.iceberg_table`): listed by ingestion hour from metadata.

Teams whose events land in an Iceberg table (Iceberg's Kafka Connect sink, Firehose, a Flink job) keep
no folder of hourly files: the table is the archive. This module gives it the listing interface the
folder archives have, from the table's metadata alone (manifests and column bounds, never a data scan):

- the hours of the pinned (current) snapshot that hold rows, each as one `ArchiveFile` whose `rows` and
  `size` come from the data files' metrics (a file spanning several hours is counted in its first, read
  in all of them);
- each hour's *content version*: the last `append` snapshot that added rows to it. A compaction
  (`replace`) or a snapshot expiry changes no version, so neither looks like new data; an `overwrite` or
  `delete` changes none either but is reported (`removals`), never silently followed;
- the snapshot the run reads (`snapshot_id` of every listed hour), so that all days of a run read one
  consistent state of the table (`iceberg_reader.read_table_lines`).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from backfill_platform.masking import mask
from backfill_platform.pipeline.archive.listing import ArchiveFile, Removal, UnlistedFile
from backfill_platform.pipeline.archive.opening import ArchiveReadError
from backfill_platform.specs.archive_location import ArchiveSpec
from backfill_platform.specs.durations import HOUR

# Appends are looked for among snapshots committed from this long before the first listed hour: rows
# are committed after they are ingested, so older snapshots cannot have added rows to a listed hour.
# The margin covers a writer's clock running behind the ingestion timestamps.
COMMIT_CLOCK_MARGIN = timedelta(hours=6)
# The content version of an hour whose appends are all older than the retained snapshots (expired).
APPENDED_BEFORE_HISTORY = "appended before the retained snapshots"


@dataclass
class TableArchive:
    """The Iceberg table `identifier` (`namespace.table`) of `catalog` (a PyIceberg catalog) as an archive."""

    identifier: str
    ingestion_column: str
    catalog: Any
    # Filled by each listing: what removed rows from the listed hours since the walk's start.
    removals: list[Removal] = field(default_factory=list)

    def list_hour(self, hour: datetime) -> list[ArchiveFile]:
        return self.list_range(hour, hour + HOUR)

    def list_range(self, start: datetime, end: datetime) -> list[ArchiveFile]:
        """One entry per ingestion hour in [start, end) holding rows in the current snapshot."""
        table = self._load()
        snapshot = table.current_snapshot()
        self.removals = []
        if snapshot is None:
            return []
        start = start.replace(minute=0, second=0, microsecond=0)
        live = self._live_hours(table, snapshot, start, end)
        versions = self._versions(table, snapshot, start, end)
        return [
            ArchiveFile(
                path=f"iceberg:{self.identifier}@{snapshot.snapshot_id}",
                name=f"{self.identifier}/{hour:%Y-%m-%dT%H}",
                ingestion_hour=hour,
                size=figures[1],
                modified_ns=0,
                content_version=versions.get(hour, APPENDED_BEFORE_HISTORY),
                rows=figures[0],
                snapshot_id=snapshot.snapshot_id,
            )
            for hour, figures in sorted(live.items())
        ]

    def unlisted_files(
        self, first_hour: datetime, fmt: object = None, count: bool = True
    ) -> list[UnlistedFile]:
        """Rows no window reads: those without an ingestion time, and those ingested before `first_hour`."""
        table = self._load()
        snapshot = table.current_snapshot()
        if snapshot is None:
            return []
        field_id = self._field(table).field_id
        found = []
        for task in table.scan(snapshot_id=snapshot.snapshot_id).plan_files():
            data = task.file
            nulls = (data.null_value_counts or {}).get(field_id, 0)
            name = data.file_path.rsplit("/", 1)[-1]
            if nulls:
                found.append(
                    UnlistedFile(
                        name, data.file_size_in_bytes, nulls, f"{nulls} rows have no {self.ingestion_column}"
                    )
                )
            hours = self._file_hours(table, data)
            if hours and hours[0] < first_hour:
                early = sum(1 for h in hours if h < first_hour)
                found.append(
                    UnlistedFile(
                        name,
                        data.file_size_in_bytes,
                        data.record_count if early == len(hours) else 0,
                        f"ingestion hour {hours[0]:%Y-%m-%d %H}:00 is before the stream's first read window",
                    )
                )
        return found

    # -- metadata ---------------------------------------------------------------------------------

    def _load(self) -> Any:
        from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError, RESTError

        try:
            return self.catalog.load_table(self.identifier)
        except (NoSuchTableError, NoSuchNamespaceError):
            raise ArchiveReadError(f"archive table {self.identifier} does not exist in the catalog") from None
        except RESTError as error:
            # The class says what went wrong; the server's body is not repeated (it may echo the request).
            raise ArchiveReadError(
                f"archive table {self.identifier}: the catalog answered with an error "
                f"({type(error).__name__}); see the catalog server's log"
            ) from None
        except Exception as error:
            # Any other answer (or requests' URL) may quote the request's headers: masked, and not kept as
            # the cause, since Dagster stores a failed step's causes too.
            if not type(error).__module__.startswith(("pyiceberg", "requests", "urllib3")):
                raise
            raise ArchiveReadError(
                mask(
                    f"the catalog cannot load archive table {self.identifier}: {type(error).__name__}: {error}"
                )
            ) from None

    def _field(self, table: Any) -> Any:
        try:
            return table.schema().find_field(self.ingestion_column)
        except ValueError as error:
            raise ArchiveReadError(
                f"archive table {self.identifier} has no ingestion-time column {self.ingestion_column!r} "
                f"(columns: {', '.join(f.name for f in table.schema().fields)})"
            ) from error

    def _live_hours(
        self, table: Any, snapshot: Any, start: datetime, end: datetime
    ) -> dict[datetime, list[int]]:
        """{hour: [rows, bytes]} of the snapshot's data files whose ingestion times fall in [start, end)."""
        live: dict[datetime, list[int]] = defaultdict(lambda: [0, 0])
        scan = table.scan(snapshot_id=snapshot.snapshot_id, row_filter=self._row_filter(table, start, end))
        for task in scan.plan_files():
            hours = [h for h in self._file_hours(table, task.file) if start <= h < end]
            if not hours:
                continue
            for hour in hours:
                live[hour]  # every hour it spans is read
            live[hours[0]][0] += task.file.record_count
            live[hours[0]][1] += task.file.file_size_in_bytes
        return dict(live)

    def _versions(self, table: Any, snapshot: Any, start: datetime, end: datetime) -> dict[datetime, str]:
        """Each hour's last append (`<sequence number>:<snapshot id>`), and the removals seen meanwhile."""
        from pyiceberg.manifest import DataFileContent, ManifestEntryStatus
        from pyiceberg.table.snapshots import ancestors_of

        io = table.io
        versions: dict[datetime, str] = {}
        oldest = (start - COMMIT_CLOCK_MARGIN).timestamp() * 1000
        for snap in ancestors_of(snapshot, table.metadata):
            if snap.timestamp_ms < oldest:
                break
            operation = str(snap.summary.operation.value) if snap.summary is not None else "append"
            added: dict[datetime, int] = defaultdict(int)
            removed: dict[datetime, int] = defaultdict(int)
            deleted_by_files = 0
            for manifest in snap.manifests(io):
                if manifest.added_snapshot_id != snap.snapshot_id:
                    continue  # carried over from an earlier snapshot
                for entry in manifest.fetch_manifest_entry(io, discard_deleted=False):
                    if entry.snapshot_id != snap.snapshot_id or entry.status == ManifestEntryStatus.EXISTING:
                        continue
                    if entry.data_file.content != DataFileContent.DATA:
                        # A delete file (merge-on-read): rows deleted, its hours unknown from metadata.
                        if entry.status == ManifestEntryStatus.ADDED:
                            deleted_by_files += entry.data_file.record_count
                        continue
                    hours = [h for h in self._file_hours(table, entry.data_file) if start <= h < end]
                    bucket = added if entry.status == ManifestEntryStatus.ADDED else removed
                    for hour in hours:
                        bucket[hour] += entry.data_file.record_count
            if deleted_by_files:
                self.removals.append(
                    Removal(
                        snap.snapshot_id,
                        operation,
                        datetime.fromtimestamp(snap.timestamp_ms / 1000, UTC),
                        [],
                        deleted_by_files,
                        0,
                    )
                )
            if operation == "append":
                for hour in added:
                    versions.setdefault(hour, f"{snap.sequence_number}:{snap.snapshot_id}")
            elif removed or added:
                rows_removed, rows_added = sum(removed.values()), sum(added.values())
                # A rewrite (compaction) that keeps every row of the same hours changes nothing.
                balanced = (
                    operation == "replace" and rows_removed == rows_added and set(added) <= set(removed)
                )
                if not balanced:
                    self.removals.append(
                        Removal(
                            snap.snapshot_id,
                            operation,
                            datetime.fromtimestamp(snap.timestamp_ms / 1000, UTC),
                            sorted(set(added) | set(removed)),
                            rows_removed,
                            rows_added,
                        )
                    )
        return versions

    def _file_hours(self, table: Any, data: Any) -> list[datetime]:
        """The ingestion hours a data file's rows span, from its column bounds (metrics)."""
        from pyiceberg.conversions import from_bytes

        column = self._field(table)
        low, high = (
            (data.lower_bounds or {}).get(column.field_id),
            (data.upper_bounds or {}).get(column.field_id),
        )
        if low is None or high is None:
            if data.record_count and (data.null_value_counts or {}).get(column.field_id) == data.record_count:
                return []  # only rows without an ingestion time: `unlisted_files` reports them
            raise ArchiveReadError(
                f"archive table {self.identifier}: data file {data.file_path} has no bounds for "
                f"{self.ingestion_column!r}, so its ingestion hours cannot be told without reading it; set the "
                f"table property write.metadata.metrics.column.{self.ingestion_column}=full (or `truncate`/"
                "`counts` → `full`) and rewrite the file"
            )
        first = _as_datetime(column.field_type, from_bytes(column.field_type, low))
        last = _as_datetime(column.field_type, from_bytes(column.field_type, high))
        hours, hour = [], first.replace(minute=0, second=0, microsecond=0)
        while hour <= last:
            hours.append(hour)
            hour += HOUR
        return hours

    def _row_filter(self, table: Any, start: datetime, end: datetime) -> Any:
        from pyiceberg.expressions import And, GreaterThanOrEqual, LessThan

        column = self._field(table)
        low, high = _literal(column.field_type, start), _literal(column.field_type, end)
        return And(GreaterThanOrEqual(self.ingestion_column, low), LessThan(self.ingestion_column, high))


def _as_datetime(kind: Any, value: int) -> datetime:
    """A bound of the ingestion column as a UTC datetime: micros for timestamps, millis for longs."""
    from pyiceberg.types import LongType, TimestampType, TimestamptzType

    if isinstance(kind, (TimestampType, TimestamptzType)):
        return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=value)
    if isinstance(kind, LongType):
        return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=value)
    raise ArchiveReadError(
        f"the ingestion-time column must be a timestamp or epoch milliseconds (long), not {kind}"
    )


def _literal(kind: Any, moment: datetime) -> Any:
    from pyiceberg.types import LongType, TimestamptzType

    if isinstance(kind, LongType):
        return int(moment.timestamp() * 1000)
    if isinstance(kind, TimestamptzType):
        return moment.astimezone(UTC).isoformat()
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat()


def table_archive(archive: ArchiveSpec, catalog: Any | None = None) -> TableArchive:
    """The stream's archive table, in its `archive.catalog` or the platform's (PyIceberg, as Spark's)."""
    if catalog is None:
        from backfill_platform.lakehouse.resources import archive_catalog_from_env, open_catalog

        catalog = archive_catalog_from_env(archive.catalog).load() if archive.catalog else open_catalog()
    return TableArchive(archive.iceberg_table, archive.ingestion_time, catalog)
