"""Signs of life inside a step: what Spark is doing, logged every few seconds to the run's log.

A step of a long backfill is minutes of Spark work between its start and end events. `step_progress`
runs beside it a thread that asks the driver's own status store (no Spark job, no listener) which stages
are running, how many of their tasks are done and how many records they read or shuffled, and logs one
`progress:` line to the step's log (`context.log`, Dagster's event log): the CLI shows the latest under its
bar, or as timestamped lines in a log, and the UI shows them in the run's logs. Display only: a failure to
read the status is a line saying so, never an error of the step.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

PROGRESS_PREFIX = "progress: "
PROGRESS_SECONDS_ENV = "BACKFILL_PLATFORM_PROGRESS_SECONDS"
DEFAULT_PROGRESS_SECONDS = 10.0
_STAGES_SHOWN = 2


def progress_seconds() -> float:
    """How often a running step logs its progress: `BACKFILL_PLATFORM_PROGRESS_SECONDS` (0: never)."""
    value = os.environ.get(PROGRESS_SECONDS_ENV, "").strip()
    try:
        seconds = float(value) if value else DEFAULT_PROGRESS_SECONDS
    except ValueError:
        raise ValueError(f"{PROGRESS_SECONDS_ENV} must be a number of seconds, not {value!r}") from None
    if seconds < 0:
        raise ValueError(f"{PROGRESS_SECONDS_ENV} must not be negative")
    return seconds


def _active_context() -> Any:
    """The process's SparkContext, if one runs (never starts one)."""
    from pyspark import SparkContext

    return SparkContext._active_spark_context


def spark_activity() -> str:
    """What Spark is doing now, in one line: the running stages (name, tasks done of all, records read
    and shuffled so far), or that no stage runs, or that Spark has not started."""
    sc = _active_context()
    if sc is None or sc._jsc is None:  # none yet, or its JVM side still being made
        return "Spark starting"
    store = sc._jsc.sc().statusStore()
    stages = store.activeStages()
    shown = []
    for i in range(min(stages.size(), _STAGES_SHOWN)):
        stage = stages.apply(i)
        name = str(stage.name()).split(" at ", 1)
        where = name[1].split("backfill_platform/", 1)[-1] if len(name) > 1 else ""
        records = int(stage.inputRecords()) + int(stage.shuffleReadRecords())
        shown.append(
            f"stage {stage.stageId()} ({name[0]}{' at ' + where if where else ''}): "
            f"{stage.numCompleteTasks()}/{stage.numTasks()} tasks"
            + (f", {records:,} records in" if records else "")
        )
    if not shown:
        return f"no Spark stage running ({store.jobsList(None).size()} jobs done in this process)"
    more = stages.size() - len(shown)
    return "; ".join(shown) + (f"; {more} more stage(s)" if more > 0 else "")


class _Reporter(threading.Thread):
    def __init__(self, log: Callable[[str], None], every: float) -> None:
        super().__init__(daemon=True, name="step-progress")
        self.log, self.every = log, every
        self.began = time.monotonic()
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(self.every):
            try:
                activity = spark_activity()
            except Exception as error:  # display only: the step goes on
                activity = f"Spark's status could not be read ({type(error).__name__})"
            try:
                self.log(f"{PROGRESS_PREFIX}{time.monotonic() - self.began:.0f} s: {activity}")
            except Exception:  # the run's log is gone (the step ended meanwhile): nothing to tell
                return


@contextmanager
def step_progress(log: Callable[[str], None], every: float | None = None) -> Iterator[None]:
    """Log `spark_activity` through `log` every `every` seconds (`progress_seconds`) while the block runs."""
    every = progress_seconds() if every is None else every
    if every <= 0:
        yield
        return
    reporter = _Reporter(log, every)
    reporter.start()
    try:
        yield
    finally:
        reporter.stopped.set()
        reporter.join(timeout=5)
