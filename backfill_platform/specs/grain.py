"""The grain of partitions: a UTC hour (`2026-10-01-14:00`), or a day (`2026-10-01`), UTC or local.

Every per-partition mechanism (the read window, settledness, the checks' verdicts, the ledger, promotion,
revert) speaks of partitions through one `Grain`: its Dagster partition keys and the UTC instants they
stand for. Keys are Dagster's own formats (`DailyPartitionsDefinition`, `HourlyPartitionsDefinition`), so
a key in the UI, a ledger row and a snapshot's summary are the same text.

A day in a time zone (`Grain("day", "America/New_York")`) runs from one local midnight to the next by
the zone's rules: the day summer time ends has 25 hours (2026-11-01 in New York: 04:00 to 05:00 UTC the
next day), the day it starts 23. Hours are always UTC hours: a local hour would skip or repeat at DST.

Standard library only: the specs and the bench's child process import it without Dagster or Spark.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import cached_property
from typing import Literal
from zoneinfo import ZoneInfo

from backfill_platform.specs.durations import DAY, HOUR

GrainUnit = Literal["day", "hour"]

_FORMATS = {"day": "%Y-%m-%d", "hour": "%Y-%m-%d-%H:%M"}
_LENGTHS = {"day": DAY, "hour": HOUR}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Grain:
    """One partition's span of event time: an hour (UTC), or a day in `zone` (an IANA name)."""

    unit: GrainUnit = "day"
    zone: str = "UTC"

    def __post_init__(self) -> None:
        if self.unit == "hour" and self.zone != "UTC":
            raise ValueError(f"hours are UTC hours, not hours of {self.zone}")

    @property
    def local(self) -> bool:
        """Days of a zone other than UTC: their lengths vary (23, 24 or 25 hours)."""
        return self.zone != "UTC"

    @cached_property
    def _zone(self) -> ZoneInfo:
        return ZoneInfo(self.zone)

    @property
    def length(self) -> timedelta:
        """The nominal length (a local day may be an hour shorter or longer: use `bounds`)."""
        return _LENGTHS[self.unit]

    @property
    def key_format(self) -> str:
        """The `strftime` format of its Dagster partition keys."""
        return _FORMATS[self.unit]

    @property
    def spark_key_format(self) -> str:
        """The same format as Spark's `date_format` writes it (the session's time zone is UTC)."""
        return "yyyy-MM-dd" if self.unit == "day" else "yyyy-MM-dd-HH:mm"

    @property
    def iceberg_transform(self) -> str:
        """Iceberg's partition transform whose partitions are exactly this grain's: `days` or `hours`."""
        return f"{self.unit}s"

    @property
    def plural(self) -> str:
        return f"{self.unit}s"

    def floor(self, instant: datetime) -> datetime:
        """The start (UTC) of the partition holding `instant` (an aware datetime)."""
        if self.local:
            return self.start(instant.astimezone(self._zone).date())
        return _EPOCH + ((instant.astimezone(UTC) - _EPOCH) // self.length) * self.length

    def ceil(self, instant: datetime) -> datetime:
        floor = self.floor(instant)
        return floor if floor == instant else self.end(floor)

    def key(self, instant: datetime) -> str:
        """The partition key of the partition holding `instant`."""
        if self.local:
            return instant.astimezone(self._zone).date().isoformat()
        return self.floor(instant).strftime(self.key_format)

    def end(self, start: datetime) -> datetime:
        """The end (UTC) of the partition that starts at `start`."""
        if self.local:
            return self.start(start.astimezone(self._zone).date() + DAY)
        return start + self.length

    def shift(self, key: str, count: int) -> str:
        """The key `count` partitions after `key` (before it when negative)."""
        if self.local:
            return (date.fromisoformat(key) + count * DAY).isoformat()
        return self.key(self.start(key) + count * self.length)

    def start(self, key: str | date | datetime) -> datetime:
        """The UTC instant the partition `key` starts (a day may be given as a `date`; an instant is
        returned as it is)."""
        if isinstance(key, datetime):  # already an instant (naive: UTC)
            return key if key.tzinfo else key.replace(tzinfo=UTC)
        if isinstance(key, date):
            return datetime(key.year, key.month, key.day, tzinfo=self._zone).astimezone(UTC)
        try:
            return datetime.strptime(str(key), self.key_format).replace(tzinfo=self._zone).astimezone(UTC)
        except ValueError:
            raise ValueError(
                f"{key!r} is not a {self.unit} partition key such as {_EPOCH.strftime(self.key_format)!r}"
            ) from None

    def bounds(self, first: str | date, last: str | date | None = None) -> tuple[datetime, datetime]:
        """[start, end) of the partitions `first` to `last`, both included (`first` alone by default)."""
        return self.start(first), self.end(self.start(first if last is None else last))

    def keys_between(self, start: datetime, end: datetime) -> list[str]:
        """The keys of the partitions that start in [start, end), in order."""
        first = self.ceil(start)
        if self.local:
            keys, at = [], first
            while at < end:
                keys.append(self.key(at))
                at = self.end(at)
            return keys
        count = max(0, -(-(end - first) // self.length))
        return [(first + i * self.length).strftime(self.key_format) for i in range(count)]

    @staticmethod
    def of_key(key: str) -> Grain:
        """The grain whose keys look like `key` (`2026-10-01` or `2026-10-01-14:00`)."""
        return DAILY if len(key) == len("2026-10-01") else HOURLY

    def partitions_in(self, span: timedelta) -> int:
        """How many partitions before one a span back from its start reaches into (0 for none); a local
        day counts as 24 hours."""
        return -(-span // self.length)

    def day_of(self, key: str) -> date:
        """The day a partition is of: a day's own date (local for a local day), an hour's UTC day."""
        return date.fromisoformat(key[:10])


def value_key(value: date | str) -> str:
    """A partition key from a collected `pipeline.partitions.partition_of` value: a day's date, or an
    hour's key (text)."""
    return value if isinstance(value, str) else value.isoformat()


DAILY = Grain("day")
HOURLY = Grain("hour")
