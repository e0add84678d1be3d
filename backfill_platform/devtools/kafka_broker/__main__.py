"""Run a single-node Kafka broker in the foreground, for trying a replay to Kafka (`make kafka`).

    python -m backfill_platform.devtools.kafka_broker [--port 9092] [--state-dir DIR]

The broker is formatted afresh at each start (its state folder is emptied first): topics do not survive a
restart. Create the backfill topic, then replay to it (`backfill-platform replay --to-kafka TOPIC`).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from backfill_platform import settings
from backfill_platform.devtools.kafka_broker.broker import kafka_broker
from backfill_platform.devtools.tool_jars import serve_in_foreground, stop_on_sigterm


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m backfill_platform.devtools.kafka_broker", description=__doc__
    )
    parser.add_argument("--port", type=int, default=9092, help="loopback port (0 = any free port)")
    parser.add_argument(
        "--state-dir", type=Path, default=None, help="the broker's data and log (default: <data dir>/kafka)"
    )
    args = parser.parse_args(argv)
    stop_on_sigterm()
    state_dir = args.state_dir or settings.data_dir() / "kafka"
    shutil.rmtree(state_dir / "data", ignore_errors=True)
    with kafka_broker(state_dir, port=args.port) as broker:
        return serve_in_foreground(
            broker.process,
            [
                f"Kafka broker serving at {broker.bootstrap} (log {broker.log}). Point the platform at it:",
                f"  export {settings.KAFKA_BOOTSTRAP_ENV}={broker.bootstrap}",
            ],
        )


if __name__ == "__main__":
    sys.exit(main())
