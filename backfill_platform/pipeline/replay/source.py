"""The events a replay republishes: the stream's events table, read through PyIceberg (no Spark).

The table already holds one row per event id, upcast to the latest schema, validated. A replay reads
one pinned snapshot, in slices of event time (bounded memory), each sorted by (event_time, event_id):
that order is total (ids are unique), so a position in it means the same thing after a restart.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from backfill_platform.lakehouse.tables import RAW_NAMESPACE
from backfill_platform.specs.common import column_name
from backfill_platform.specs.durations import HOUR
from backfill_platform.specs.grain import DAILY
from backfill_platform.specs.stream import StreamSpec

ORDER = [("event_time", "ascending"), ("event_id", "ascending")]


class ReplaySourceError(ValueError):
    """The events of the range cannot be read (no table, an expired snapshot)."""


@dataclass(frozen=True)
class Event:
    event_id: str
    event_time: datetime
    data: bytes  # the JSON object sent to Kinesis
    # Who the event is about (the stream's `subject_field`) as text, for erasure at send time; None when the
    # stream declares none or the event has no value.
    subject: str | None = None


def iso_utc(value: datetime) -> str:
    """ISO-8601 in UTC with microseconds and a `Z`: `2026-10-01T00:09:01.494000Z`."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _json_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return iso_utc(value if value.tzinfo else value.replace(tzinfo=UTC))
    if isinstance(value, date):
        return value.isoformat()
    return value


class EventSource:
    """The events of [start, end) of one stream, in one snapshot of its events table."""

    def __init__(
        self,
        catalog: Any,
        spec: StreamSpec,
        start: date | datetime,
        end: date | datetime,
        snapshot_id: int | None = None,
        slice_size: timedelta = HOUR,
    ) -> None:
        from pyiceberg.exceptions import NoSuchTableError

        self.spec, self.start, self.end, self.slice_size = spec, start, end, slice_size
        try:
            self.table = catalog.load_table((RAW_NAMESPACE, spec.events_table))
        except NoSuchTableError as error:
            raise ReplaySourceError(
                f"stream {spec.name!r} has no events table {RAW_NAMESPACE}.{spec.events_table} yet: "
                "materialize its events first"
            ) from error
        if snapshot_id is None:
            current = self.table.current_snapshot()
            snapshot_id = current.snapshot_id if current is not None else None
        elif self.table.snapshot_by_id(snapshot_id) is None:
            raise ReplaySourceError(
                f"snapshot {snapshot_id} of {RAW_NAMESPACE}.{spec.events_table}, which the checkpoint "
                "was taken on, no longer exists (expired?): start this replay over with a new checkpoint"
            )
        self.snapshot_id = snapshot_id
        # The latest schema's fields, under the stream's own field names (as the live stream has them):
        # raw field path -> its events column (a nested path is stored flattened).
        self.payload = {path: column_name(path) for path in spec.latest.fields}
        self.columns = ("event_id", "event_time", *self.payload.values())
        self.subject_column = spec.subject_column  # one of the payload's columns (a latest field)

    def _scan(self, low: datetime, high: datetime):
        from pyiceberg.expressions import And, GreaterThanOrEqual, LessThan

        return self.table.scan(
            row_filter=And(
                GreaterThanOrEqual("event_time", low.isoformat()), LessThan("event_time", high.isoformat())
            ),
            selected_fields=self.columns,
            snapshot_id=self.snapshot_id,
        )

    def count(self) -> int:
        if self.snapshot_id is None:
            return 0
        return self._scan(DAILY.start(self.start), DAILY.start(self.end)).count()

    def events(self, after: tuple[datetime, str] | None = None) -> Iterator[Event]:
        """Every event of the range in (event_time, event_id) order, or only those after `after`."""
        import pyarrow.compute as pc

        if self.snapshot_id is None:
            return
        low, end = DAILY.start(self.start), DAILY.start(self.end)
        if after is not None:
            after_time, after_id = after
            # Skip the slices before the position without reading them.
            low = max(low, low + (after_time - low) // self.slice_size * self.slice_size)
        while low < end:
            high = min(low + self.slice_size, end)
            rows = self._scan(low, high).to_arrow()
            if after is not None and rows.num_rows:
                times = rows.column("event_time")
                stamp = after_time.astimezone(UTC)
                later = pc.or_(
                    pc.greater(times, stamp),
                    pc.and_(pc.equal(times, stamp), pc.greater(rows.column("event_id"), after_id)),
                )
                rows = rows.filter(later)
            for row in rows.sort_by(ORDER).to_pylist():
                yield self.event(row)
            low = high

    def event(self, row: dict[str, Any]) -> Event:
        spec = self.spec
        body: dict[str, Any] = {}
        _put(body, spec.event_id_field, row["event_id"])
        _put(body, spec.event_time.field, iso_utc(row["event_time"]))
        for path, column in self.payload.items():
            _put(body, path, _json_value(row[column]))
        data = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
        subject = _subject_text(row[self.subject_column]) if self.subject_column else None
        return Event(event_id=row["event_id"], event_time=row["event_time"], data=data, subject=subject)


def _subject_text(value: Any) -> str | None:
    """A subject as the events pass hashes it: Spark's cast of the typed value to text (`true`, `42`)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _put(body: dict[str, Any], path: str, value: Any) -> None:
    """Set `value` at a field path of a JSON object, nested objects made on the way (`a.b.c`)."""
    *parents, name = path.split(".")
    for part in parents:
        body = body.setdefault(part, {})
    body[name] = value
