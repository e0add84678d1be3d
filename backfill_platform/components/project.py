"""`backfill-platform init PATH`: a new dg project for a team's own streams and datasets.

What `create-dagster project` would write, reduced to what the platform needs: a package with a defs
folder that `dg` manages, a `definitions.py` that loads it, and the `Lakehouse` component instance.
Streams and datasets are then added with `dg scaffold defs backfill_platform.components.Stream <name>`.
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import backfill_platform
from backfill_platform.specs.common import check_identifier

PYPROJECT = """\
[project]
name = "{name}"
version = "0.1.0"
requires-python = ">=3.11"
dependencies = ["backfill_platform"]

[tool.dagster]
module_name = "{name}.definitions"
code_location_name = "{name}"

[tool.dg]
directory_type = "project"

[tool.dg.project]
root_module = "{name}"
"""

DEFINITIONS = '''\
"""The code location: every component instance of the defs folder."""

from pathlib import Path

from dagster import Definitions, definitions, load_from_defs_folder

from backfill_platform.specs.yaml_guard import check_folder


@definitions
def defs() -> Definitions:
    # The platform's YAML bounds (size, depth, aliases, duplicate keys, regular files) before Dagster parses.
    check_folder(Path(__file__).parent / "defs")
    return load_from_defs_folder(path_within_project=Path(__file__).parent)
'''

LAKEHOUSE = """\
# The catalog and Spark resources of the tier (BACKFILL_PLATFORM_* environment variables; embedded
# SQLite under BACKFILL_PLATFORM_DATA by default), the fenced executor, the daily-refresh sensor and
# the revert job.
type: backfill_platform.components.Lakehouse
"""


def init_project(path: Path) -> list[Path]:
    """Write a new project at `path` (named after its folder); refuse to overwrite anything."""
    name = check_identifier(path.name)
    package = path / name
    files = {
        path / "pyproject.toml": PYPROJECT.format(name=name),
        package / "__init__.py": "",
        package / "definitions.py": DEFINITIONS,
        package / "defs" / "__init__.py": "",
        package / "defs" / "lakehouse" / "defs.yaml": LAKEHOUSE,
    }
    existing = [p for p in files if p.exists()]
    if existing:
        raise FileExistsError(f"refusing to overwrite {', '.join(map(str, existing))}")
    for file, text in files.items():
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(textwrap.dedent(text))
    return list(files)


def copy_demo_components(defs: Path) -> list[Path]:
    """Copy the demo's streams and datasets (this package's component instances, their transforms with
    them) into a project's defs folder, for a project that reads the demo's streams beside its own (the
    bench's hourly dataset, tests); the Lakehouse instance is the project's own. Refuses to overwrite."""
    demo = Path(backfill_platform.__file__).parent / "defs"
    copied = []
    for component in sorted(demo.iterdir()):
        if component.name == "lakehouse" or not (component / "defs.yaml").is_file():
            continue
        if (defs / component.name).exists():
            raise FileExistsError(f"refusing to overwrite {defs / component.name}")
        shutil.copytree(component, defs / component.name, ignore=shutil.ignore_patterns("__pycache__"))
        copied.append(defs / component.name)
    return copied
