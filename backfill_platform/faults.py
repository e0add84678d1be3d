"""Failpoints: named places in a run where the fault tests make the process die as if SIGKILLed.

A crash can happen between any two commits; these are the places where it leaves the most to repair
(one table written, the next not). `BACKFILL_PLATFORM_FAILPOINTS=name[,name]` arms them (`name@N`: at
its N-th pass in the process, e.g. the third batch of a replay); unset, each costs one environment lookup.
"""

from __future__ import annotations

import os
import signal
from collections import Counter

FAILPOINTS_ENV = "BACKFILL_PLATFORM_FAILPOINTS"

# The events table is committed, the quarantine table of the same window is not.
EVENTS_BEFORE_QUARANTINE = "events-before-quarantine"
# The shadow table is committed, its validation and ledger record are not.
SHADOW_BEFORE_CHECKS = "shadow-before-checks"
# Production is committed, the ledger does not say so yet.
PROMOTION_BEFORE_LEDGER = "promotion-before-ledger"


_passes: Counter[str] = Counter()


def failpoint(name: str) -> None:
    """Die here, at once and without cleanup, when `name` is armed (for this pass)."""
    armed = os.environ.get(FAILPOINTS_ENV, "")
    if not armed:
        return
    _passes[name] += 1
    for entry in armed.split(","):
        point, _, nth = entry.partition("@")
        if point == name and (not nth or int(nth) == _passes[name]):
            die()


def die() -> None:
    """SIGKILL this process. (A module function, so that an in-process soak can stand in for it.)"""
    os.kill(os.getpid(), signal.SIGKILL)
