"""Kafka Connect's jars: the worker's (`pom.xml` beside this module) and the Iceberg sink plugin's
(`iceberg_plugin/pom.xml`), each locked by the `jars.sha256` beside its pom: `tool_jars`.

python -m backfill_platform.devtools.kafka_connect.classpath [--offline] [--force] [--lock]

resolves (or verifies) both sets. The worker runs on its set; the plugin's set is a folder of its own that
Connect loads in isolation through `plugin.path` (`plugin_path`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from backfill_platform.devtools.tool_jars import ToolJars

HERE = Path(__file__).resolve().parent
WORKER_JARS = ToolJars("kafka-connect", HERE / "pom.xml")
PLUGIN_JARS = ToolJars("kafka-connect-iceberg", HERE / "iceberg_plugin" / "pom.xml")
WORKER_CLASS = "org.apache.kafka.connect.cli.ConnectStandalone"
PLUGIN_NAME = "iceberg"


def classpath() -> str:
    """The worker's `-cp` argument (raises naming `make jars` when its jars are not as locked)."""
    return WORKER_JARS.classpath()


def plugin_path(state_dir: Path) -> Path:
    """A `plugin.path` folder in `state_dir` whose one plugin, `iceberg/`, is a link to the plugin's jar
    folder (Connect takes each subfolder of a `plugin.path` entry as one plugin: the jar folder itself would
    make each jar a plugin of its own). Raises naming `make jars` when the plugin's jars are not as locked."""
    PLUGIN_JARS.classpath()
    plugins = state_dir / "plugins"
    plugins.mkdir(parents=True, exist_ok=True)
    link = plugins / PLUGIN_NAME
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(PLUGIN_JARS.folder(), target_is_directory=True)
    return plugins


def main(argv: Sequence[str] | None = None) -> int:
    """`make jars` / `make jars-lock` for both sets; the exit status is the worst of the two."""
    prog = "python -m backfill_platform.devtools.kafka_connect.classpath"
    return max(jars.main(prog, argv) for jars in (WORKER_JARS, PLUGIN_JARS))


if __name__ == "__main__":
    sys.exit(main())
