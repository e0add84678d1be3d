"""Progress of a backfill as it runs: the in-process run's step events, or a submitted backfill's states.

`StepWatcher` reads the steps of the run this process starts from the Dagster instance as they are
stored; `progress_display` shows them as a live bar on a terminal, or as timestamped lines in a log.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from dagster import DagsterEventType, DagsterInstance, RunsFilter
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TimeElapsedColumn

from backfill_platform.operations import submit
from backfill_platform.pipeline.step_progress import PROGRESS_PREFIX


@dataclass(frozen=True)
class StepProgress:
    """What the run did so far: steps ended of all it will execute, and the one(s) running."""

    run_id: str
    total: int
    done: int
    running: tuple[str, ...]
    event: str = ""  # `<step> succeeded` etc. for the newest step event, for non-terminal output
    detail: str = ""  # the newest `progress:` line of a running step (`pipeline/step_progress.py`)


STEP_EVENTS = {
    DagsterEventType.STEP_START: "started",
    DagsterEventType.STEP_SUCCESS: "succeeded",
    DagsterEventType.STEP_FAILURE: "failed",
    DagsterEventType.STEP_SKIPPED: "skipped",
}


class StepWatcher(threading.Thread):
    """Polls the instance for the run this process starts (found by its tags, created after the watcher)
    and its step events; calls `on_step` on every change. Display only: any error is swallowed."""

    def __init__(self, instance: DagsterInstance, tags: dict[str, str], on_step, poll: float = 0.5):
        super().__init__(daemon=True, name="backfill-steps")
        self.instance, self.tags, self.on_step, self.poll = instance, tags, on_step, poll
        self.since = datetime.now(UTC) - timedelta(seconds=1)
        self.stopped = threading.Event()
        self.run_id: str | None = None
        self.total = 0
        self.cursor: str | None = None
        self.done: set[str] = set()
        self.running: dict[str, None] = {}

    def run(self) -> None:
        while not self.stopped.wait(self.poll):
            self._safe_poll()
        self._safe_poll()

    def stop(self) -> None:
        self.stopped.set()
        self.join(timeout=10)

    def _safe_poll(self) -> None:
        with suppress(Exception):  # progress must never break the backfill
            self._poll()

    def _poll(self) -> None:
        if self.run_id is None:
            runs = self.instance.get_runs(RunsFilter(tags=self.tags, created_after=self.since), limit=1)
            if not runs:
                return
            run = runs[0]
            self.run_id = run.run_id
            plan = self.instance.get_execution_plan_snapshot(run.execution_plan_snapshot_id)
            self.total = len(plan.step_keys_to_execute or [s.key for s in plan.steps])
            self.on_step(StepProgress(self.run_id, self.total, 0, ()))
        # Every record, not only step events: a running step's `progress:` lines are plain log messages.
        records = self.instance.get_records_for_run(self.run_id, cursor=self.cursor, limit=1000)
        self.cursor = records.cursor or self.cursor
        for record in records.records:
            entry = record.event_log_entry
            event = entry.dagster_event
            if event is None:
                message = entry.user_message or ""
                if message.startswith(PROGRESS_PREFIX) and entry.step_key in self.running:
                    detail = f"{entry.step_key} {message.removeprefix(PROGRESS_PREFIX)}"
                    self.on_step(self._state(detail=detail))
                continue
            if event.event_type not in STEP_EVENTS:
                continue
            what = STEP_EVENTS[event.event_type]
            if what == "started":
                self.running[event.step_key] = None
            else:
                self.running.pop(event.step_key, None)
                self.done.add(event.step_key)
            self.on_step(self._state(event=f"{event.step_key} {what}"))

    def _state(self, event: str = "", detail: str = "") -> StepProgress:
        total = max(self.total, len(self.done))
        return StepProgress(self.run_id, total, len(self.done), tuple(self.running), event, detail)


@contextmanager
def progress_display(console: Console, title: str) -> Iterator[Callable[..., None]]:
    """`update(text, done, total, line)`: a live bar on a terminal; otherwise each `line` printed once
    (a log, not a redrawn bar, when stdout is a file or a pipe)."""
    console.print(title, markup=False, highlight=False)
    started = time.monotonic()
    if not console.is_terminal:

        def log(text: str, done: int | None = None, total: int | None = None, line: str = "") -> None:
            if line:
                console.print(f"  {time.monotonic() - started:6.1f}s {line}", markup=False, highlight=False)

        yield log
        return
    columns = (SpinnerColumn(), "{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("starting", total=None)

        def update(text: str, done: int | None = None, total: int | None = None, line: str = "") -> None:
            progress.update(task, description=text, completed=done or 0, total=total or None)
            if line:
                progress.console.print(
                    f"  {time.monotonic() - started:6.1f}s {line}", markup=False, highlight=False
                )

        yield update


def step_update(update: Callable[..., None]) -> Callable[[StepProgress], None]:
    """Adapts `progress_display`'s `update` to the in-process run's step events."""

    def on_step(step: StepProgress) -> None:
        running = ", ".join(step.running) or ("starting" if not step.done else "-")
        text = f"step {min(step.done + 1, step.total)}/{step.total}: {step.detail or running}"
        if step.detail:
            line = step.detail
        elif step.event:
            line = f"step {step.event} ({step.done}/{step.total} done)"
        else:
            line = f"run {step.run_id}: {step.total} steps"
        update(text, step.done, step.total, line)

    return on_step


def backfill_update(update: Callable[..., None]) -> Callable[[submit.BackfillProgress], None]:
    """Adapts `progress_display`'s `update` to a submitted backfill's polled states.

    The bar follows every state; a line is printed only at a milestone (the backfill's status changes,
    a run ends, a partition fails), so that a year of partitions gives a few lines, not hundreds."""
    printed: list[tuple] = []

    def on_progress(state: submit.BackfillProgress) -> None:
        short = f"{state.status}, runs {state.runs_done}/{state.runs} done, asset partitions"
        milestone = (state.status, state.runs, state.runs_done, state.failed)
        line = "" if printed and printed[-1] == milestone else state.text()
        if line:
            printed.append(milestone)
        update(short, state.done, state.partitions or None, line)

    return on_progress
