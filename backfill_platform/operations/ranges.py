"""How the commands name partitions: the bounds of a range as `--start/--end` take them, and the word for
a partition (`day`, or `hour` of an hourly stream or dataset)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, date, datetime

from backfill_platform.specs.grain import Grain

_HOUR_OPTION = "%Y-%m-%dT%H:%M"


def bound(grain: Grain, value: date | datetime) -> datetime:
    """A range's bound as a UTC instant: a day is the instant it starts on `grain` (its midnight), a
    datetime is itself (a naive one, as click parses it, is UTC)."""
    if not isinstance(value, datetime):
        return grain.start(value)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def option_text(grain: Grain, at: date | datetime) -> str:
    """A partition boundary as `--start/--end` take it: a day's key (`2026-10-01`) on a daily grain, else
    `2026-10-01T14:00`."""
    instant = bound(grain, at)
    return grain.key(instant) if grain.unit == "day" else instant.strftime(_HOUR_OPTION)


def widened(grain: Grain, given: tuple[datetime, datetime], whole: tuple[date | datetime, ...]) -> str | None:
    """What a command says when the range it was `given` (`--start`, `--end`, UTC) holds parts of hours
    and it runs the `whole` hours that touch it instead; None when they are the same, and for days (a
    time within a day is refused, never widened: `cli.app.partition_range`)."""
    if grain.unit == "day":
        return None
    start, end = (bound(grain, at) for at in given)
    first, after = (bound(grain, at) for at in whole)
    if (start, end) == (first, after):
        return None
    return (
        f"{start:%Y-%m-%dT%H:%M} to {end:%Y-%m-%dT%H:%M} covers whole {grain.plural}: "
        f"{option_text(grain, first)} to {option_text(grain, after)} (exclusive)"
    )


def partition_noun(keys: Iterable[str], plural: bool = False) -> str:
    """What the partitions `keys` are: `day`, `hour`, or `day or hour` for a mix (`day` for none);
    `days`, `hours`, `days or hours` when `plural`."""
    units = sorted({Grain.of_key(key).unit for key in keys}) or ["day"]
    return " or ".join(f"{unit}s" if plural else unit for unit in units)
