"""Time as the specs speak of it: the units `HOUR` and `DAY`; the UTC days that event days are (`midnight`,
`day_bounds`); durations as specs write them, `90s`, `15m`, `8h`, `2d` (combinable: `1d12h`), parsed by
`parse_duration` and written back by `format_duration`.

Standard library only: the bench's child process imports it without Dagster or Spark.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)

_PART = re.compile(r"(\d+)([smhd])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
_SIZES = (("d", DAY), ("h", HOUR), ("m", timedelta(minutes=1)), ("s", timedelta(seconds=1)))


def midnight(day: date | str) -> datetime:
    """The UTC instant a day (a date, or its partition key `2026-10-01`) starts."""
    start = day if isinstance(day, date) else date.fromisoformat(day)
    return datetime(start.year, start.month, start.day, tzinfo=UTC)


def day_bounds(first: date | str, last: date | str | None = None) -> tuple[datetime, datetime]:
    """[start, end) of the days `first` to `last`, both included (the day `first` alone by default), in UTC."""
    return midnight(first), midnight(first if last is None else last) + DAY


def parse_duration(text: str | int | timedelta) -> timedelta:
    """Parse `8h`, `15m`, `1d12h` or a number of seconds into a timedelta; raise ValueError otherwise."""
    if isinstance(text, timedelta):
        return text
    if isinstance(text, int) and not isinstance(text, bool):
        try:
            return timedelta(seconds=text)
        except OverflowError:
            raise ValueError(f"{text!r} is too large a duration") from None
    cleaned = str(text).strip().lower()
    if not cleaned or _PART.sub("", cleaned):
        raise ValueError(f"{text!r} is not a duration such as '15m', '8h' or '1d12h'")
    total = timedelta()
    try:
        for amount, unit in _PART.findall(cleaned):
            total += timedelta(**{_UNITS[unit]: int(amount)})
    except OverflowError:
        raise ValueError(f"{text!r} is too large a duration") from None
    return total


def format_duration(value: timedelta) -> str:
    """A duration as specs write it, which `parse_duration` reads back: `15m`, `8h`, `1d12h`, `0s`
    (whole seconds; a fraction is dropped)."""
    rest, parts = timedelta(seconds=int(value.total_seconds())), []
    for unit, size in _SIZES:
        count, rest = divmod(rest, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"
