"""How the suite shares two workers (pytest-xdist, `make test`'s `-n 2 --dist loadgroup`).

Most of a test's wall time is spent waiting: on its JVM, on a subprocess's cold start, on `dagster dev`'s daemon
ticks. Two workers, each with its own session fixtures (data directory, SparkSession, moto server), overlap those
waits. Tests are handed out in groups that keep their fixtures' cost paid once:

- every test that uses the session's `dagster dev` (the `dagster_dev` fixture) is one group, wherever its
  module is, so one worker starts that server and runs its GraphQL backfill;
- any other test goes with its module (module-scoped fixtures are built once).

A module whose tests take minutes is marked `long_running(minutes=N)` (a rough figure from `--durations`); in
file order the groups are handed out longest first, so neither worker is left with a long one at the end. `--reverse` and pytest-randomly
keep their own orders. `make test TEST_WORKERS=0` runs everything in one process, as before.
"""

from __future__ import annotations

import pytest

LONG_RUNNING = "long_running"
DAGSTER_DEV_GROUP = "dagster_dev"
# The session's `dagster dev`, its GraphQL backfill and the tests that read them, in all.
DAGSTER_DEV_MINUTES = 7


def register_marker(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{LONG_RUNNING}(minutes=N): the module's tests take about N minutes; longest groups are handed out first",
    )


def group_of(item: pytest.Item) -> str:
    """The xdist group of a test: the session `dagster dev`'s, or its module's."""
    if DAGSTER_DEV_GROUP in getattr(item, "fixturenames", ()):
        return DAGSTER_DEV_GROUP
    return item.path.stem


def mark_group(item: pytest.Item) -> None:
    """Mark a test with its group as it is collected (xdist reads the marks later and appends `@group` to
    node ids)."""
    item.add_marker(pytest.mark.xdist_group(group_of(item)))


def minutes_of(item: pytest.Item) -> float:
    """The declared minutes of a test's group (0 when its module is not `long_running`)."""
    if group_of(item) == DAGSTER_DEV_GROUP:
        return DAGSTER_DEV_MINUTES
    mark = item.get_closest_marker(LONG_RUNNING)
    return float(mark.kwargs["minutes"]) if mark else 0.0


def long_running_first(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In file order: groups by declared minutes, longest first; the rest in file order (a stable sort)."""
    if config.getoption("reverse") or not config.pluginmanager.is_blocked("randomly"):
        return
    items.sort(key=lambda item: -minutes_of(item))
