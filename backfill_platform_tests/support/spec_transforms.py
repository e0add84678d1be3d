"""A team's transform beside its spec, written three ways (a module, a package, a file in a subfolder), and a
project whose dataset's versions name each: what the spec-reference tests load (unit/specs) and run on
Spark's executors (integration/specs)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from backfill_platform.components.registry import Project, demo_spec_data
from backfill_platform_tests.support.projects import defs_folder, write_project
from backfill_platform_tests.support.specs import mutated

TRANSFORM = textwrap.dedent(
    '''
    """A team's transform, next to its spec: a Python UDF calling a helper of this module."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    PREFIX = "{prefix}"


    def label(title_id):
        return PREFIX + title_id.upper()


    def views(events):
        return events.select(F.udf(label, StringType())("title_id").alias("label"))
    '''
)


def write_transforms(folder: Path) -> None:
    """The same transform three ways: a module beside the spec, a package, and a file in a subfolder."""
    (folder / "team_views.py").write_text(TRANSFORM.format(prefix="module:"))
    (folder / "team_pkg").mkdir()
    (folder / "team_pkg" / "__init__.py").write_text("")
    (folder / "team_pkg" / "helpers.py").write_text(TRANSFORM.format(prefix="package:"))
    (folder / "team_pkg" / "views.py").write_text("from .helpers import views  # noqa: F401\n")
    (folder / "code").mkdir()
    (folder / "code" / "views.py").write_text(TRANSFORM.format(prefix="file:"))


VERSIONS = {
    "module": "team_views:views",
    "package": "team_pkg.views:views",
    "file": "code/views.py:views",
}


def write_transforms_beside_specs(parent: Path) -> Project:
    """A project under `parent` holding the demo stream and views_per_title, one version per way of naming
    a transform (VERSIONS; the file's is active), with `write_transforms` beside the dataset's defs.yaml."""
    views = demo_spec_data("views_per_title")
    views.update(versions={k: {"transform": v} for k, v in VERSIONS.items()}, active_version="file")
    project = write_project(parent, [mutated(), views])
    write_transforms(defs_folder(project.root) / "views_per_title")
    return project
