"""Probes of the boundary (issue 30), code: a transform reference resolves only inside the spec's folder
or the project's packages, and is judged from its source before anything is imported."""

from __future__ import annotations

from pathlib import Path

import pytest

from backfill_platform_tests.support.hostile import (  # noqa: F401 - nothing_outside is an autouse fixture
    DATASET,
    SENTINEL,
    component_file,
    dataset,
    hostile_archive,
    nothing_outside,
    project_with,
    refused,
    write_yaml,
)
from backfill_platform_tests.support.specs import mutated

# --- transforms come from the project ------------------------------------------------------------

# Importing this module writes the sentinel: a probe that imported it would leave it behind.
SIDE_EFFECT = f"from pathlib import Path\nPath({str(SENTINEL)!r}).write_text('imported')\n"


def transform_folder(folder: Path) -> Path:
    """Hostile neighbours of a spec's folder: code outside it (`../../x`), links out of it, non-functions
    in it."""
    outside = folder.parent.parent / "x"
    outside.mkdir()
    (outside / "mod.py").write_text(SIDE_EFFECT + "def f(events):\n    return events\n")
    (outside / "pkg").mkdir()
    (outside / "pkg" / "__init__.py").write_text(SIDE_EFFECT)
    (outside / "pkg" / "sub.py").write_text(SIDE_EFFECT + "def f(events):\n    return events\n")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "linked.py").symlink_to(outside / "mod.py")
    (folder / "linkpkg").symlink_to(outside / "pkg")
    (folder / "values.py").write_text(SIDE_EFFECT + "s = 'not a function'\nclass C:\n    pass\n")
    (folder / "good.py").write_text("def f(events):\n    return events\n")
    return folder


TRANSFORM_PROBES = [
    ("../../x/mod.py:f", "leaves the spec's folder"),
    ("linked.py:f", "is a link leading outside the spec's folder"),
    ("linked:f", "is a link leading outside the spec's folder"),
    ("linkpkg.sub:f", "is a link leading outside the spec's folder"),
    ("values:s", "'s' in"),
    ("values:C", "is not a function (a class)"),
    ("values:missing", "has no 'missing'"),
    ("this:s", "is neither beside the spec"),
    ("os:system", "is neither beside the spec"),
    ("subprocess:run", "in the project's packages"),
    ("backfill_platform.settings:DATA_DIR_ENV", "is not a function (a value)"),
    ("backfill_platform.nothing_here:f", "is not importable"),
    ("/etc/passwd.py:f", "is not 'package.module:function'"),
]


@pytest.mark.parametrize(("reference", "words"), TRANSFORM_PROBES, ids=[r for r, _ in TRANSFORM_PROBES])
def test_transforms_from_outside_the_project_are_refused_before_import(tmp_path, reference, words):
    import sys

    data = dataset(versions={"v2": {"transform": reference}}, active_version="v2")
    project = project_with(tmp_path, {"playback": mutated(), "views": data})
    transform_folder(component_file(project, "views").parent)  # the dataset's transforms resolve beside it
    modules = set(sys.modules)
    message = refused(project, "views")
    assert "field 'versions.v2.transform'" in message and words in message, message
    assert not {"this", "_backfill_platform_transform_values"} & (set(sys.modules) - modules)
    assert not any(name.startswith("_backfill_platform_transform_") for name in set(sys.modules) - modules)


def test_transforms_inside_the_project_still_load(tmp_path, monkeypatch):
    from backfill_platform.specs.transforms import load_transform

    folder = transform_folder(tmp_path / "team" / "specs")
    (folder / "code").mkdir()
    (folder / "code" / "inner.py").symlink_to(folder / "good.py")  # a link that stays inside
    spec = folder / "views.yaml"
    assert load_transform("good:f", spec).__name__ == "f"
    assert load_transform("code/inner.py:f", spec).__name__ == "f"
    assert load_transform("backfill_platform_tests.transforms:dropped_rows", spec).__name__ == "dropped_rows"
    # A team's own package is allowed once listed.
    (tmp_path / "teamlib").mkdir()
    (tmp_path / "teamlib" / "__init__.py").write_text("def f(events):\n    return events\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match="in the project's packages"):
        load_transform("teamlib:f", spec)
    monkeypatch.setenv("BACKFILL_PLATFORM_TRANSFORM_PACKAGES", "teamlib")
    assert load_transform("teamlib:f", spec).__module__ == "teamlib"


def test_a_transform_beside_a_spec_is_trusted_code_it_reads_the_environment(tmp_path, monkeypatch):
    """docs/security.md, the trust model: the platform refuses a transform from outside the project, but a
    transform beside the spec is Python run with the platform's rights. It can read the environment and
    the host's files: transforms are reviewed like code; only specs are data."""
    from backfill_platform.specs.transforms import load_transform

    monkeypatch.setenv("ISSUE59_FAKE_SECRET", "fake-secret-59")
    (tmp_path / "host.txt").write_text("a host file")
    (tmp_path / "specs").mkdir()
    host = str(tmp_path / "host.txt")
    (tmp_path / "specs" / "nosy.py").write_text(
        "import os\nfrom pathlib import Path\n"
        f"SEEN = os.environ['ISSUE59_FAKE_SECRET'], Path({host!r}).read_text()\n"
        "def f(events):\n    return SEEN\n"
    )
    spec = tmp_path / "specs" / "views.yaml"
    assert load_transform("nosy:f", spec)(None) == ("fake-secret-59", "a host file")
