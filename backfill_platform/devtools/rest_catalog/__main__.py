"""Run Iceberg's REST catalog server in the foreground, for trying the team tier (`make rest-catalog`).

    python -m backfill_platform.devtools.rest_catalog [--port 8181] [--host 127.0.0.1] [--warehouse s3://…]

An s3:// warehouse uses the standard AWS variables (AWS_ENDPOINT_URL or AWS_ENDPOINT_URL_S3, AWS_REGION and
the credentials); the bucket must exist. It prints the variables that point the platform at it. The server is
unauthenticated: it listens on 127.0.0.1 unless `--host` (or REST_HOST) names another address.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from backfill_platform import settings
from backfill_platform.devtools.rest_catalog.server import LOOPBACK, rest_catalog_server
from backfill_platform.devtools.tool_jars import serve_in_foreground, stop_on_sigterm


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m backfill_platform.devtools.rest_catalog", description=__doc__
    )
    parser.add_argument("--port", type=int, default=8181, help="port (0 = any free port)")
    parser.add_argument(
        "--host",
        default=os.environ.get("REST_HOST", "").strip() or LOOPBACK,
        help="address to listen on (default 127.0.0.1, or REST_HOST; 0.0.0.0 = every interface, unauthenticated)",
    )
    parser.add_argument(
        "--warehouse",
        default="",
        help="warehouse location (default: file://<data dir>/rest-warehouse; s3://bucket/prefix for S3)",
    )
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        help="the server's catalog database and log (default: <data dir>/rest-catalog)",
    )
    args = parser.parse_args(argv)
    stop_on_sigterm()
    data = settings.data_dir()
    warehouse = args.warehouse or f"file://{data / 'rest-warehouse'}"
    state_dir = args.state_dir or data / "rest-catalog"
    with rest_catalog_server(
        state_dir,
        warehouse,
        s3_endpoint=settings.s3_endpoint(),
        region=settings.aws_region(),
        port=args.port,
        host=args.host,
    ) as server:
        return serve_in_foreground(
            server.process,
            [
                f"REST catalog serving at {server.uri}, listening on {server.host} (warehouse {warehouse}; log {server.log}). "
                "Point the platform at it:",
                f"  export {settings.CATALOG_URI_ENV}={server.uri}",
                f"  export {settings.WAREHOUSE_ENV}={warehouse}",
            ],
        )


if __name__ == "__main__":
    sys.exit(main())
