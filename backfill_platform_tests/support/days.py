"""The session's days after its first (D2, D3, D4 after `session.START`) and an hour of a day in UTC: what the
completeness tests count in, the rule's (unit/events) and the runs' (integration/events)."""

from __future__ import annotations

from datetime import date, datetime, timedelta

from backfill_platform.specs.durations import HOUR, midnight
from backfill_platform_tests.support.session import START

D2, D3, D4 = (START + timedelta(days=i) for i in (1, 2, 3))


def utc(day: date, hour: int = 0) -> datetime:
    return midnight(day) + hour * HOUR
