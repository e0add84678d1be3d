"""A team's transform beside its spec, written three ways (a module, a package, a file in a subfolder), and a
folder of specs whose dataset's versions name each: what the spec-reference tests load (unit/specs) and run
on Spark's executors (integration/specs)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from backfill_platform.specs.loader import builtin_spec_data
from backfill_platform_tests.support.specs import mutated, write_spec

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


def write_transforms_beside_specs(folder: Path) -> None:
    """`write_transforms`, with the demo stream's spec and views_per_title's, one version per way of naming
    a transform (VERSIONS; the file's is active)."""
    write_transforms(folder)
    write_spec(folder, "playback", mutated())
    views = builtin_spec_data("views_per_title")
    views.update(versions={k: {"transform": v} for k, v in VERSIONS.items()}, active_version="file")
    write_spec(folder, "views", views)
