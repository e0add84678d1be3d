"""The REST catalog server's jars (`pom.xml` beside this module, locked by `jars.sha256`): `tool_jars`.

python -m backfill_platform.devtools.rest_catalog.classpath [--offline] [--force] [--lock]
"""

from __future__ import annotations

import sys
from pathlib import Path

from backfill_platform.devtools.tool_jars import ToolJars

JARS = ToolJars("rest-catalog", Path(__file__).resolve().parent / "pom.xml")


def classpath() -> str:
    """The server's `-cp` argument (raises naming `make jars` when its jars are not as locked)."""
    return JARS.classpath()


if __name__ == "__main__":
    sys.exit(JARS.main("python -m backfill_platform.devtools.rest_catalog.classpath"))
