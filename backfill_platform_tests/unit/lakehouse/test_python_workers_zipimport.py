"""The patch PySpark's Python workers run under (lakehouse/python_workers.py), in this process: a zip archive
on the workers' path is read again only when it changed; a changed one is read once and its new modules
import, a deleted one is forgotten as Python forgets it. That the session's workers run under it:
integration/lakehouse/test_python_workers.py."""

from __future__ import annotations

import importlib
import sys
import zipfile
import zipimport
from pathlib import Path

import pytest

from backfill_platform.lakehouse import python_workers


def write_archive(path: Path, modules: dict[str, str]) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for name, source in modules.items():
            archive.writestr(f"{name}.py", source)


@pytest.fixture
def patched(monkeypatch: pytest.MonkeyPatch):
    """The patch, undone after the test (this process's importers keep Python's own behaviour)."""
    monkeypatch.setattr(zipimport.zipimporter, "invalidate_caches", zipimport.zipimporter.invalidate_caches)
    python_workers.read_archives_only_when_changed()
    python_workers.read_archives_only_when_changed()  # idempotent: patched once
    reads: list[str] = []
    real = zipimport._read_directory  # type: ignore[attr-defined]

    def counting(archive: str):
        reads.append(archive)
        return real(archive)

    monkeypatch.setattr(zipimport, "_read_directory", counting)
    return reads


def test_an_unchanged_archive_is_not_read_again(tmp_path: Path, patched: list[str]) -> None:
    archive = tmp_path / "code.zip"
    write_archive(archive, {"first": "VALUE = 1\n"})
    importer = zipimport.zipimporter(str(archive))
    importer.invalidate_caches()  # the first call stamps (and reads, as Python does)
    read_once = len(patched)
    for _ in range(5):
        importer.invalidate_caches()
    assert len(patched) == read_once
    assert importer.find_spec("first") is not None and importer.find_spec("second") is None


def test_a_changed_archive_is_read_again_and_its_new_module_imports(
    tmp_path: Path, patched: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = tmp_path / "code.zip"
    write_archive(archive, {"first": "VALUE = 1\n"})
    importer = zipimport.zipimporter(str(archive))
    importer.invalidate_caches()
    reads = patched.count(str(archive))
    # A task's files changed on disk (another size): the next invalidation reads it, once.
    write_archive(archive, {"first": "VALUE = 1\n", "second_module_of_the_archive": "VALUE = 2\n"})
    importer.invalidate_caches()
    importer.invalidate_caches()
    assert patched.count(str(archive)) == reads + 1
    assert importer.find_spec("second_module_of_the_archive") is not None
    monkeypatch.syspath_prepend(str(archive))
    monkeypatch.delitem(sys.modules, "second_module_of_the_archive", raising=False)
    importlib.invalidate_caches()
    assert importlib.import_module("second_module_of_the_archive").VALUE == 2


def test_a_deleted_archive_is_forgotten_as_python_forgets_it(tmp_path: Path, patched: list[str]) -> None:
    archive = tmp_path / "code.zip"
    write_archive(archive, {"first": "VALUE = 1\n"})
    importer = zipimport.zipimporter(str(archive))
    importer.invalidate_caches()
    archive.unlink()
    importer.invalidate_caches()  # no stamp: Python's own answer (the archive's files dropped)
    assert importer.find_spec("first") is None
