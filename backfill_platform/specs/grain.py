"""The grain of a stream's partitions: a UTC day (`2026-10-01`) or a UTC hour (`2026-10-01-14:00`).

Every per-partition mechanism (the read window, settledness, the checks' verdicts, the ledger, promotion,
revert) speaks of partitions through one `Grain`: its length, its Dagster partition keys and the instants
they stand for. Keys are Dagster's own formats (`DailyPartitionsDefinition`, `HourlyPartitionsDefinition`),
so a key in the UI, a ledger row and a snapshot's summary are the same text.

Standard library only: the specs and the bench's child process import it without Dagster or Spark.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Literal

from backfill_platform.specs.durations import DAY, HOUR

GrainUnit = Literal["day", "hour"]

_FORMATS = {"day": "%Y-%m-%d", "hour": "%Y-%m-%d-%H:%M"}
_LENGTHS = {"day": DAY, "hour": HOUR}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Grain:
    """One partition's span of event time, in UTC."""

    unit: GrainUnit = "day"

    @property
    def length(self) -> timedelta:
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
        """The start of the partition holding `instant` (an aware datetime)."""
        return _EPOCH + ((instant.astimezone(UTC) - _EPOCH) // self.length) * self.length

    def ceil(self, instant: datetime) -> datetime:
        floor = self.floor(instant)
        return floor if floor == instant else floor + self.length

    def key(self, instant: datetime) -> str:
        """The partition key of the partition holding `instant`."""
        return self.floor(instant).strftime(self.key_format)

    def start(self, key: str | date) -> datetime:
        """The UTC instant the partition `key` starts (a day's key may be given as a `date`)."""
        if isinstance(key, date) and not isinstance(key, datetime):
            return datetime(key.year, key.month, key.day, tzinfo=UTC)
        try:
            return datetime.strptime(str(key), self.key_format).replace(tzinfo=UTC)
        except ValueError:
            raise ValueError(
                f"{key!r} is not a {self.unit} partition key such as {_EPOCH.strftime(self.key_format)!r}"
            ) from None

    def bounds(self, first: str | date, last: str | date | None = None) -> tuple[datetime, datetime]:
        """[start, end) of the partitions `first` to `last`, both included (`first` alone by default)."""
        return self.start(first), self.start(first if last is None else last) + self.length

    def keys_between(self, start: datetime, end: datetime) -> list[str]:
        """The keys of the partitions that start in [start, end), in order."""
        first = self.ceil(start)
        count = max(0, -(-(end - first) // self.length))
        return [(first + i * self.length).strftime(self.key_format) for i in range(count)]

    @staticmethod
    def of_key(key: str) -> Grain:
        """The grain whose keys look like `key` (`2026-10-01` or `2026-10-01-14:00`)."""
        return DAILY if len(key) == len("2026-10-01") else HOURLY

    def partitions_in(self, span: timedelta) -> int:
        """How many whole partitions `span` reaches into (its ceiling in partitions; 0 for none)."""
        return -(-span // self.length)

    def day_of(self, key: str) -> date:
        """The UTC day a partition starts on: the ledger's `partition` column."""
        return self.start(key).date()

    def value_key(self, value: date | str) -> str:
        return value_key(value)


def value_key(value: date | str) -> str:
    """A partition key from a collected `pipeline.partitions.partition_of` value: a day's date, or an
    hour's key (text)."""
    return value if isinstance(value, str) else value.isoformat()


DAILY = Grain("day")
HOURLY = Grain("hour")
