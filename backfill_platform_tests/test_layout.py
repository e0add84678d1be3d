"""The tree reads as the design: packages import only from packages before them, and never in a cycle;
private Dagster APIs come through one module.

Read from the source with `ast` (no import runs), so a function-level import counts as much as a
top-level one.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import dagster

import backfill_platform
from backfill_platform import dagster_internals

PACKAGE = Path(backfill_platform.__file__).parent
# Groups whose sub-packages are units of their own (pipeline.events, orchestration.runs, ...).
GROUPS = ("pipeline", "orchestration", "devtools")
# Bottom to top: each unit may import only units before it (and itself).
LAYERS = [
    "settings",
    "dagster_internals",  # every private Dagster import, each with its reason
    "faults",
    "specs",
    "lakehouse",
    "pipeline",  # partitions, the hour -> day mapping, run tags, the Spark multi-asset
    "pipeline.archive",
    "pipeline.tables",
    "pipeline.validation",
    "pipeline.ledger",
    "pipeline.events",
    "pipeline.shadow",
    "pipeline.promotion",
    "pipeline.replay",
    "orchestration.runs",
    "orchestration.automation",
    "orchestration",  # the factory, the instance
    "components",
    "defs",
    "definitions",
    "ops",
    "devtools.generator",
    "devtools.demo",
    "devtools.bench",
    "devtools",  # jar repair
    "cli",
]


def unit(module: str) -> str:
    """`backfill_platform.pipeline.events.parse` -> `pipeline.events`; `...ops.plan` -> `ops`."""
    parts = module.split(".")[1:]
    if parts[0] in GROUPS and len(parts) > 2:
        return ".".join(parts[:2])
    return parts[0]


def imports() -> dict[tuple[str, str], list[str]]:
    """(importing unit, imported unit) -> the files where it happens."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE.parent).with_suffix("")
        module = ".".join(relative.parts)
        if module == "backfill_platform.__init__":
            continue
        source = unit(module)
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.module.startswith("backfill_platform")
            ):
                targets = (
                    [f"{node.module}.{alias.name}" for alias in node.names]
                    if node.module == "backfill_platform"
                    else [node.module]
                )
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith("backfill_platform.")]
            else:
                continue
            for target in targets:
                if unit(target) != source:
                    edges[(source, unit(target))].append(str(path.relative_to(PACKAGE)))
    return edges


def test_every_unit_has_a_layer() -> None:
    units = {
        unit(".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts)) for p in PACKAGE.rglob("*.py")
    }
    units.discard("__init__")
    assert units, "no module found"
    assert sorted(units - set(LAYERS)) == []


def test_no_package_imports_one_above_it() -> None:
    edges = imports()
    assert edges, "no import found: the scan is broken"
    rank = {name: i for i, name in enumerate(LAYERS)}
    upward = {
        f"{src} -> {dst}": sorted(set(files)) for (src, dst), files in edges.items() if rank[dst] > rank[src]
    }
    assert upward == {}


def test_no_import_cycle_between_packages() -> None:
    graph: dict[str, set[str]] = defaultdict(set)
    for src, dst in imports():
        graph[src].add(dst)

    def reaches(start: str, goal: str) -> bool:
        seen, stack = set(), [start]
        while stack:
            node = stack.pop()
            if node == goal:
                return True
            if node not in seen:
                seen.add(node)
                stack.extend(graph[node])
        return False

    cycles = sorted(f"{a} <-> {b}" for a in list(graph) for b in graph[a] if reaches(b, a))
    assert cycles == []


def test_private_dagster_apis_come_through_one_module() -> None:
    """`dagster._...` only in `dagster_internals.py`, where each import says why no public API does it."""
    private: dict[str, list[str]] = defaultdict(list)
    scanned = 0
    for path in PACKAGE.rglob("*.py"):
        scanned += 1
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            private[str(path.relative_to(PACKAGE))] += [n for n in names if n.startswith("dagster._")]
    assert scanned > 50, "no module scanned"
    assert private.pop("dagster_internals.py"), "dagster_internals.py imports nothing private: remove it"
    assert {path: names for path, names in private.items() if names} == {}


def test_what_dagster_internals_lists_is_still_private() -> None:
    """A name the installed Dagster now exports belongs in a public import instead."""
    assert dagster_internals.__all__
    assert [name for name in dagster_internals.__all__ if hasattr(dagster, name)] == []
