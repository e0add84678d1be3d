"""The tree reads as the design: packages import only from packages below them, never in a cycle
(import-linter's layers contracts in pyproject.toml); private Dagster APIs come through one module.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from collections import defaultdict
from pathlib import Path

import dagster

import backfill_platform
from backfill_platform import dagster_internals

PACKAGE = Path(backfill_platform.__file__).parent
REPO_ROOT = PACKAGE.parent


def test_every_package_imports_only_the_layers_below_it() -> None:
    """`lint-imports` keeps every contract; each is exhaustive, so a new package must be placed."""
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run(
        [str(lint), "--config", str(REPO_ROOT / "pyproject.toml"), "--no-cache"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    contracts = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    assert len(contracts) >= 5, "the layer contracts went missing"
    assert f"Contracts: {len(contracts)} kept, 0 broken." in result.stdout, result.stdout


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
