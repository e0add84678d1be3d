"""The map of the code tree (docs/layout.md) names every module under backfill_platform/, once, and no
module that is gone.

The page's tree writes a module relative to the entry it belongs to: `partitions.py` on the line of
`pipeline/`'s child, `opening.py` in the prose of `pipeline/archive/`, `demo/story.py` in that of
`devtools/`. A file entry's prose speaks of its own folder (`dagster_home.py` beside `instance.py`).
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import backfill_platform

PACKAGE = Path(backfill_platform.__file__).parent
LAYOUT = PACKAGE.parent / "docs" / "layout.md"

_ENTRY = re.compile(r"(\w+/|\w+\.py)(?:\s|$)")
_MODULE = re.compile(r"(?<![\w./-])((?:\w+/)*\w+\.py)(?![\w/])")


def _holds_code(path: Path) -> bool:
    """Anything besides a docstring: an `__init__.py` that only documents its package is not a module here."""
    body = ast.parse(path.read_text()).body
    return any(not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)) for node in body)


def package_modules() -> set[str]:
    return {
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if path.name != "__init__.py" or _holds_code(path)
    }


def named_modules(page: str) -> list[str]:
    """Every module the page's `backfill_platform/` tree names, as a path relative to backfill_platform/."""
    lines = iter(page.splitlines())
    for line in lines:
        if line == "backfill_platform/":
            break
    else:
        raise AssertionError("docs/layout.md has no `backfill_platform/` tree")
    folders = [(0, "")]  # (indent of the entry, its folder below backfill_platform/)
    section = ""  # the folder the current entry's prose speaks of
    named: list[str] = []
    for line in lines:
        indent = len(line) - len(line.lstrip())
        if line and indent == 0:
            break  # the tree of backfill_platform/ ends where the tests' begins
        entry = _ENTRY.match(line.lstrip())
        if entry and indent <= folders[-1][0] + 2:
            while folders[-1][0] >= indent:
                folders.pop()
            parent = folders[-1][1]
            name = entry.group(1)
            if name.endswith("/"):
                section = parent + name
                folders.append((indent, section))
            else:
                section = parent
        named += [section + module for module in _MODULE.findall(line)]
    return named


def test_the_layout_page_names_every_module_once_and_none_that_is_gone() -> None:
    named = named_modules(LAYOUT.read_text())
    modules = package_modules()
    assert len(modules) > 100, "no module found"
    missing = sorted(modules - set(named))
    stale = sorted(set(named) - modules)
    twice = sorted(module for module, count in Counter(named).items() if count > 1)
    assert not (missing or stale or twice), (
        f"docs/layout.md does not name these modules: {missing}; "
        f"names modules that do not exist: {stale}; names these more than once: {twice}"
    )


def walk_modules(page: str) -> list[str]:
    """The modules the page's walk from a spec to production names (paths under backfill_platform/)."""
    walk = page.split("## A spec's way to production", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"`((?:\w+/)*\w+\.py)`", walk)


def test_the_walk_from_a_spec_to_production_names_each_module_once_and_each_exists() -> None:
    named = walk_modules(LAYOUT.read_text())
    modules = package_modules()
    assert len(named) > 30, named
    stale = sorted(set(named) - modules)
    twice = sorted(module for module, count in Counter(named).items() if count > 1)
    assert not (stale or twice), f"the walk names modules that do not exist: {stale}; more than once: {twice}"
    # It walks every stage a spec's data takes on its way to production.
    for stage in ("archive", "events", "shadow", "promotion", "validation", "ledger"):
        assert any(module.startswith(f"pipeline/{stage}/") for module in named), stage
