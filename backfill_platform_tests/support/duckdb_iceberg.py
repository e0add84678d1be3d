"""DuckDB attached to an Iceberg REST catalog with an S3 warehouse: a reader no one here wrote.

DuckDB's `httpfs`, `avro` and `iceberg` extensions come from their PyPI wheels (the project's test extra);
they are loaded from those files, with DuckDB's automatic download and load off, so nothing is fetched.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

EXTENSIONS = ("httpfs", "avro", "iceberg")  # in load order: iceberg needs the other two


def extension_file(name: str) -> Path:
    import duckdb

    spec = importlib.util.find_spec(f"duckdb_extension_{name}")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"duckdb-extension-{name} is not installed: run `make setup`")
    root = Path(next(iter(spec.submodule_search_locations)))
    path = root / "extensions" / f"v{duckdb.__version__}" / f"{name}.duckdb_extension"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} missing: duckdb-extension-{name} must match duckdb {duckdb.__version__}"
        )
    return path


def attach_rest_catalog(rest_uri: str, s3_endpoint: str, region: str, key_id: str, secret: str) -> Any:
    """A DuckDB connection with the REST catalog attached as `lake` (no authorization: the test server's)."""
    import duckdb

    connection = duckdb.connect(
        config={"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"}
    )
    for name in EXTENSIONS:
        connection.execute(f"LOAD '{extension_file(name)}'")
    host = s3_endpoint.removeprefix("http://").removeprefix("https://")
    connection.execute(
        "CREATE SECRET warehouse (TYPE s3, KEY_ID ?, SECRET ?, REGION ?, ENDPOINT ?, URL_STYLE 'path', "
        "USE_SSL ?)",
        [key_id, secret, region, host, s3_endpoint.startswith("https://")],
    )
    connection.execute(f"ATTACH '' AS lake (TYPE iceberg, ENDPOINT '{rest_uri}', AUTHORIZATION_TYPE 'none')")
    return connection
