"""The Components route gets the flat route's YAML guards before Dagster parses a component file (issue 59):
a project as `backfill-platform init` writes it, with a hostile `defs.yaml` (a FIFO, a link to
`/dev/zero`, an alias bomb, 100,000-deep nesting, a `!!python` tag, a key twice, 10 MB), loaded by
Dagster's own `load_from_defs_folder` through the project's `definitions.py`, and by the real `dg` on the
routes that load the code location (`dg check defs --no-check-yaml`, `dg list defs`): each is refused
naming the file, never hangs (each bounded by a timeout) and ends in no MemoryError, RecursionError or
ConstructorError. The same probes against the guard alone: unit/specs/test_yaml_guard.py.

Not covered, because no code of the project runs there: `dg check defs`'s and `dg dev`'s own YAML pre-check
(`dagster_dg_core.check.check_yaml`), which reads and parses every `defs.yaml` in the `dg` process before
the code location is loaded."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from backfill_platform.components.project import init_project
from backfill_platform.specs.yaml_guard import SpecError
from backfill_platform_tests.support.hostile import nothing_outside  # noqa: F401 - an autouse fixture
from backfill_platform_tests.unit.specs.test_yaml_guard import BOMB

DG = Path(sys.executable).parent / "dg"
DG_TIMEOUT_SECONDS = 120
COMPONENT = "type: backfill_platform.components.Stream\nattributes:\n"
CRASHES = ("MemoryError", "RecursionError", "ConstructorError")


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


PROBES = {
    "FIFO": (lambda p: os.mkfifo(p) or p, "not a regular file (a FIFO)"),
    # A link out of the defs folder is refused before the file is even looked at (never read).
    "link to /dev/zero": (lambda p: p.symlink_to("/dev/zero") or p, "a link leading out of the spec folder"),
    "alias bomb in attributes": (
        lambda p: _write(p, COMPONENT + BOMB + "\n"),
        "YAML nodes (aliases expanded)",
    ),
    "100,000-deep nesting": (
        lambda p: _write(p, COMPONENT + "  a: " + "[" * 100_000 + "]" * 100_000 + "\n"),
        "line 3: YAML nested deeper than",
    ),
    "python tag": (
        lambda p: _write(p, COMPONENT + "  name: !!python/object/apply:os.system ['true']\n"),
        "line 3: YAML tag 'tag:yaml.org,2002:python/object/apply:os.system' is not allowed",
    ),
    "key twice": (
        lambda p: _write(p, COMPONENT + "  name: a\n  name: b\n"),
        "line 4: key 'name' appears twice",
    ),
    "10 MB": (
        lambda p: _write(p, COMPONENT + "  description: " + "x" * (10 << 20) + "\n"),
        "larger than a spec",
    ),
}


def project_with(parent: Path, name: str, probe: str) -> tuple[Path, Path]:
    """A project `name` (init's) whose defs folder holds the hostile component `bad`; its root and file."""
    root = parent / name
    init_project(root)
    folder = root / name / "defs" / "bad"
    folder.mkdir()
    make, _ = PROBES[probe]
    return root, make(folder / "defs.yaml")


def files_of(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if "__pycache__" not in p.parts}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("probe", list(PROBES))
def test_dagster_loading_a_project_refuses_a_hostile_component_file_naming_it(tmp_path, monkeypatch, probe):
    """The project's `definitions.py` (init's), which hands the defs folder to Dagster's
    `load_from_defs_folder`: the guard refuses the file before Dagster opens it."""
    name = f"team_{list(PROBES).index(probe)}"
    root, path = project_with(tmp_path, name, probe)
    before = files_of(root)
    monkeypatch.syspath_prepend(str(root))
    try:
        definitions = importlib.import_module(f"{name}.definitions")
        with pytest.raises(SpecError) as refused:
            definitions.defs()
    finally:
        for module in [m for m in sys.modules if m == name or m.startswith(f"{name}.")]:
            del sys.modules[module]
    message = str(refused.value)
    assert message.startswith(f"{path}: ") and PROBES[probe][1] in message, message
    assert "\n" not in message
    assert files_of(root) == before


def dg(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DAGSTER_HOME": str(root.parent / "home"), "DAGSTER_DISABLE_TELEMETRY": "1"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH", "")) if p)
    (root.parent / "home").mkdir(exist_ok=True)
    return subprocess.run(
        [str(DG), *args], cwd=root, env=env, capture_output=True, text=True, timeout=DG_TIMEOUT_SECONDS
    )


@pytest.mark.timeout(2 * DG_TIMEOUT_SECONDS + 60)
@pytest.mark.parametrize("probe", ["FIFO", "alias bomb in attributes", "python tag"])
def test_dg_loading_the_code_location_refuses_a_hostile_component_file_naming_it(tmp_path, probe):
    root, path = project_with(tmp_path, "team", probe)
    for args in (["check", "defs", "--no-check-yaml"], ["list", "defs"]):
        result = dg(root, *args)
        output = result.stdout + result.stderr
        assert result.returncode != 0, output[-3000:]
        assert f"{path}: " in output and PROBES[probe][1] in output, output[-3000:]
        assert not any(crash in output for crash in CRASHES), output[-3000:]
