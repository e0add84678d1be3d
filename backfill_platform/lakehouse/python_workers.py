"""PySpark's Python worker daemon (`spark.python.daemon.module`), less one cost paid on every task.

PySpark's worker starts each task with `importlib.invalidate_caches()` (pyspark/worker.py), and before
Python 3.12 a zip importer answers that by reading its archive's whole directory again. The workers' path
holds pyspark.zip, py4j's zip and spark-core's jar (5,221 entries), and every package imported from them
has an importer of its own, so each task re-read about a dozen archive directories: 6.6 of the 30 Python
CPU-seconds of a 3-day backfill in a fresh process (py-spy), more than the platform's own Python code.

Here an importer reads its archive again only when the file changed on disk (size, modification time or
inode): exactly when the read could give another answer. Nothing else of PySpark's daemon changes; it is
started as PySpark's own, `pyspark.daemon.manager()`, once the importers are patched and stamped (the
workers it forks inherit both). On Python 3.12+, whose importers re-read lazily, the patch changes nothing.
"""

from __future__ import annotations

import importlib
import os
import zipimport
from collections.abc import Callable
from typing import Any

_PATCHED = "_backfill_platform_reads_when_changed"
_STAMP = "_backfill_platform_archive_stamp"


def _archive_stamp(path: str) -> tuple[int, int, int] | None:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return (status.st_size, status.st_mtime_ns, status.st_ino)


def read_archives_only_when_changed() -> None:
    """Make `zipimporter.invalidate_caches` re-read an archive only when the file changed (idempotent)."""
    original: Callable[[Any], None] = zipimport.zipimporter.invalidate_caches
    if getattr(original, _PATCHED, False):
        return

    def invalidate_caches(importer: Any) -> None:
        stamp = _archive_stamp(importer.archive)
        if stamp is not None and getattr(importer, _STAMP, None) == stamp:
            return
        original(importer)
        setattr(importer, _STAMP, stamp)

    setattr(invalidate_caches, _PATCHED, True)
    invalidate_caches.__doc__ = original.__doc__
    zipimport.zipimporter.invalidate_caches = invalidate_caches  # type: ignore[method-assign]


def main() -> None:
    read_archives_only_when_changed()
    from pyspark import daemon

    # Stamp the daemon's importers now, so that the workers it forks inherit stamps, not a first read each.
    importlib.invalidate_caches()
    daemon.manager()


if __name__ == "__main__":
    main()
