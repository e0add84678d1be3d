"""Human-readable durations in specs: `90s`, `15m`, `8h`, `2d` (combinable: `1d12h`)."""

from __future__ import annotations

import re
from datetime import timedelta

_PART = re.compile(r"(\d+)([smhd])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


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
