"""Apache Kafka's broker jars (`pom.xml` beside this module, locked by `jars.sha256`): `tool_jars`.

python -m backfill_platform.devtools.kafka_broker.classpath [--offline] [--force] [--lock]
"""

from __future__ import annotations

import sys
from pathlib import Path

from backfill_platform.devtools.tool_jars import ToolJars

JARS = ToolJars("kafka", Path(__file__).resolve().parent / "pom.xml")
BROKER_CLASS = "kafka.Kafka"
STORAGE_TOOL_CLASS = "kafka.tools.StorageTool"


def classpath() -> str:
    """The broker's `-cp` argument (raises naming `make jars` when its jars are not as locked)."""
    return JARS.classpath()


if __name__ == "__main__":
    sys.exit(JARS.main("python -m backfill_platform.devtools.kafka_broker.classpath"))
