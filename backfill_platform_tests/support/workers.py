"""How the suite shares two workers (pytest-xdist: `make test` runs `-n 2 --dist loadscope`).

Most of a test's wall time is spent waiting: on its JVM, on a subprocess's cold start, on `dagster dev`'s daemon
ticks. Two workers, each with its own session fixtures (data directory, SparkSession, moto server), overlap those
waits. Tests are handed out in groups that keep their fixtures' cost paid once:

- every test that uses the session's `dagster dev` (the `dagster_dev` fixture) is one group, wherever its
  module is, so one worker starts that server and runs its GraphQL backfill;
- any other test goes with its module (module-scoped fixtures are built once).

A module whose tests take minutes is marked `long_running(minutes=N)` (a rough figure from `--durations`); in
file order the groups are handed out longest first, so neither worker is left with a long one at the end.
`--reverse` and pytest-randomly keep their own orders. `make test TEST_WORKERS=0` runs everything in one process.

Why not xdist's own `--dist loadgroup`: it names a test's group by appending `@group` to the item's `_nodeid`,
an attribute pytest 9 no longer reads (it keeps `_id`), so every test became a group of its own and module
fixtures were built once per worker. Here the workers, which see the fixtures, write each test's group to a file
the controller's scheduler (xdist's `loadscope`, with this grouping) reads when it hands out the work.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

LONG_RUNNING = "long_running"
DAGSTER_DEV_GROUP = "dagster_dev"
# The session's `dagster dev`, its GraphQL backfill and the tests that read them, in all.
DAGSTER_DEV_MINUTES = 7
GROUPS_FILE_ENV = "BACKFILL_PLATFORM_TEST_GROUPS_FILE"


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def configure(config: pytest.Config) -> None:
    """The marker; on a controller with workers, the file the workers will write the groups to (the
    workers inherit the variable: they are started after this)."""
    config.addinivalue_line(
        "markers",
        f"{LONG_RUNNING}(minutes=N): the module's tests take about N minutes; longest groups are handed out first",
    )
    if not is_worker(config) and (config.getoption("numprocesses", None) or 0):
        os.environ[GROUPS_FILE_ENV] = str(Path(tempfile.mkdtemp(prefix="test-groups-")) / "groups.json")


def unconfigure(config: pytest.Config) -> None:
    if not is_worker(config) and GROUPS_FILE_ENV in os.environ:
        shutil.rmtree(Path(os.environ.pop(GROUPS_FILE_ENV)).parent, ignore_errors=True)


def group_of(item: pytest.Item) -> str:
    """The group of a test: the session `dagster dev`'s, or its module's."""
    if DAGSTER_DEV_GROUP in getattr(item, "fixturenames", ()):
        return DAGSTER_DEV_GROUP
    return item.path.stem


def minutes_of(item: pytest.Item) -> float:
    """The declared minutes of a test's group (0 when its module is not `long_running`)."""
    if group_of(item) == DAGSTER_DEV_GROUP:
        return DAGSTER_DEV_MINUTES
    mark = item.get_closest_marker(LONG_RUNNING)
    return float(mark.kwargs["minutes"]) if mark else 0.0


def order_and_publish(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In file order, groups by declared minutes, longest first (a stable sort); then, on a worker, the
    group of every test for the controller (written whole, then renamed: both workers write the same)."""
    if not config.getoption("reverse") and config.pluginmanager.is_blocked("randomly"):
        items.sort(key=lambda item: -minutes_of(item))
    target = os.environ.get(GROUPS_FILE_ENV)
    if is_worker(config) and target:
        partial = Path(f"{target}.{config.workerinput['workerid']}")
        partial.write_text(json.dumps({item.nodeid: group_of(item) for item in items}))
        os.replace(partial, target)


def make_scheduler(config: pytest.Config, log: Any) -> Any:
    """xdist's `loadscope` scheduler with the groups above as its scopes, in the order the workers collected
    them; None (xdist's own) for other `--dist` modes or without the groups file."""
    target = os.environ.get(GROUPS_FILE_ENV)
    if config.getvalue("dist") != "loadscope" or not target:
        return None
    from xdist.scheduler import LoadScopeScheduling

    config.option.loadscopereorder = False  # keep the order above, not xdist's "most tests first"

    class GroupScheduling(LoadScopeScheduling):
        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            # Called once the workers have collected, so the file is there.
            if self.groups is None:
                self.groups = json.loads(Path(target).read_text())
            return self.groups.get(nodeid) or nodeid.split("::", 1)[0]

    return GroupScheduling(config, log)
