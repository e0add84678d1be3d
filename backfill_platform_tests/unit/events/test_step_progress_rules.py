"""A step's progress lines: how often, and what they say before Spark runs (no Spark here)."""

from __future__ import annotations

import threading

import pytest

from backfill_platform.pipeline import step_progress as step_progress_module
from backfill_platform.pipeline.step_progress import (
    PROGRESS_PREFIX,
    PROGRESS_SECONDS_ENV,
    progress_seconds,
    step_progress,
)


def test_the_interval_is_a_setting_and_zero_is_never(monkeypatch):
    monkeypatch.delenv(PROGRESS_SECONDS_ENV, raising=False)
    assert progress_seconds() == 10.0
    monkeypatch.setenv(PROGRESS_SECONDS_ENV, "0.5")
    assert progress_seconds() == 0.5
    monkeypatch.setenv(PROGRESS_SECONDS_ENV, "soon")
    with pytest.raises(ValueError, match="must be a number of seconds, not 'soon'"):
        progress_seconds()
    lines: list[str] = []
    with step_progress(lines.append, every=0):
        pass
    assert lines == []


def test_a_step_logs_signs_of_life_while_it_runs_and_stops_with_it(monkeypatch):
    # As in a fresh run process, before its step starts Spark (the suite's workers may run one).
    monkeypatch.setattr(step_progress_module, "_active_context", lambda: None)
    lines: list[str] = []
    logged = threading.Event()

    def log(line: str) -> None:
        lines.append(line)
        logged.set()

    with step_progress(log, every=0.05):
        assert logged.wait(5)
    count = len(lines)
    threading.Event().wait(0.2)
    assert len(lines) == count  # stopped with the step
    assert lines[0].startswith(PROGRESS_PREFIX) and lines[0].endswith(": Spark starting")
