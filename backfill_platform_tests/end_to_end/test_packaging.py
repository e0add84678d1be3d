"""A non-editable install (`pip install .`, as a Docker image does) is complete: the wheel carries every
file of the package, and the installed package loads the built-in definitions from its own package data.

The wheel is built from a copy of the package's files as a fresh clone would have them (tracked and
untracked-but-not-ignored), so nothing is written into the working tree. It is installed into a fresh
venv that sees the main venv's dependencies through a `.pth` line: the directories such a line adds are
not processed as site directories, so the main venv's editable install (its own `.pth` finder) stays
inactive there, and `import backfill_platform` resolves to the installed wheel, which is asserted.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from backfill_platform_tests.support.session import REPO_ROOT

REPO = REPO_ROOT
PACKAGE = "backfill_platform"
BUILTIN_ASSETS = {
    "archive/playback_archive",
    "raw/playback_events",
    "shadow/views_per_title__v1",
    "shadow/views_per_title__v2",
    "prod/views_per_title_production",
    "raw/impressions_events",
    "shadow/attributed_plays__v2",
    "prod/attributed_plays_production",
}
# Run by the fresh venv's python: what the installed package defines and where it read its specs from.
PROBE = """
import importlib, json, sys
from pathlib import Path
import backfill_platform
from backfill_platform.definitions import defs
from backfill_platform.components.registry import package_project, project_specs
project = package_project()
specs = project_specs(project)
specs_dir = Path(importlib.import_module(project.defs_module).__file__).parent
print(json.dumps({
    "package": backfill_platform.__file__,
    "specs_dir": str(specs_dir),
    "spec_files": sorted(p.relative_to(specs_dir).as_posix() for p in specs_dir.rglob("*.yaml")),
    "streams": sorted(specs.streams),
    "datasets": sorted(specs.datasets),
    "assets": sorted(k.to_user_string() for k in defs().resolve_asset_graph().get_all_asset_keys()),
}))
"""


def package_files() -> list[Path]:
    """The package's files as a clone has them (read-only git), relative to the repository."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", PACKAGE],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split("\n")
    return sorted(Path(name) for name in listed if name and (REPO / name).is_file())


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel `pip install .` would build (with build isolation, as in a Docker build)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    source = tmp_path_factory.mktemp("source")
    for relative in [Path("pyproject.toml"), Path("README.md"), *package_files()]:
        (source / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / relative, source / relative)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(source)],
        check=True,
        cwd=out,
    )
    (built,) = out.glob(f"{PACKAGE}-*.whl")
    return built


@pytest.fixture(scope="module")
def fresh_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new venv with only the wheel installed in it, and the main venv's dependencies visible."""
    root = tmp_path_factory.mktemp("venv")
    venv.EnvBuilder(with_pip=False).create(root)
    python = root / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # A plain directory line: its own .pth files (the editable finder among them) are not processed.
    Path(purelib, "main_venv_dependencies.pth").write_text(site.getsitepackages()[0] + "\n")
    pip = [sys.executable, "-m", "pip", "--python", str(python)]
    subprocess.run([*pip, "install", "--no-deps", "--no-index", "-q", str(wheel)], check=True)
    return root


def run_outside_repo(args: list[str], cwd: Path, data: Path) -> str:
    """Run with a working directory outside the repository and no PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(BACKFILL_PLATFORM_DATA=str(data), DAGSTER_HOME=str(cwd), TZ="UTC")
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    return result.stdout


def test_the_wheel_carries_every_file_of_the_package(wheel):
    with zipfile.ZipFile(wheel) as archive:
        in_wheel = {name for name in archive.namelist() if name.startswith(f"{PACKAGE}/")}
        spec_text = archive.read(f"{PACKAGE}/defs/playback/defs.yaml")
    expected = {relative.as_posix() for relative in package_files()}
    assert {name for name in expected if not name.endswith(".py")} >= {
        f"{PACKAGE}/defs/playback/defs.yaml",
        f"{PACKAGE}/defs/views_per_title/defs.yaml",
        f"{PACKAGE}/defs/lakehouse/defs.yaml",
    }
    assert expected - in_wheel == set(), "files of the package missing from the wheel"
    assert spec_text == (REPO / PACKAGE / "defs/playback/defs.yaml").read_bytes()


def test_installed_wheel_loads_the_builtin_definitions(fresh_venv, tmp_path):
    python = fresh_venv / "bin" / "python"
    site_packages = fresh_venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    site_packages = site_packages / "site-packages"
    probe = json.loads(run_outside_repo([str(python), "-c", PROBE], tmp_path, tmp_path / "data"))

    # The package and its specs come from the fresh venv, not from the checkout or the editable install.
    assert Path(probe["package"]).is_relative_to(site_packages), probe["package"]
    specs_dir = Path(probe["specs_dir"])
    assert specs_dir == site_packages / PACKAGE / "defs"
    assert probe["spec_files"] == [
        "attributed_plays/defs.yaml",
        "impressions/defs.yaml",
        "lakehouse/defs.yaml",
        "playback/defs.yaml",
        "playback_hourly/defs.yaml",
        "plays_new_york/defs.yaml",
        "views_per_title/defs.yaml",
    ]
    for name in probe["spec_files"]:
        assert (specs_dir / name).read_bytes() == (REPO / PACKAGE / "defs" / name).read_bytes()
    assert (probe["streams"], probe["datasets"]) == (
        ["impressions", "playback", "playback_hourly"],
        ["attributed_plays", "plays_new_york", "views_per_title"],
    )
    assert set(probe["assets"]) >= BUILTIN_ASSETS, probe["assets"]

    # The same code location through Dagster's own CLI (`dagster` is a dependency, so run as a module).
    listed = run_outside_repo(
        [str(python), "-m", "dagster", "asset", "list", "-m", "backfill_platform.definitions"],
        tmp_path,
        tmp_path / "data",
    )
    assert set(listed.split()) >= BUILTIN_ASSETS - {"archive/playback_archive"}  # sources not listed


def test_installed_console_script_runs(fresh_venv, tmp_path):
    out = run_outside_repo([str(fresh_venv / "bin" / "backfill-platform"), "--help"], tmp_path, tmp_path)
    assert "Re-derive history from an event archive safely." in out
    assert "generate" in out
