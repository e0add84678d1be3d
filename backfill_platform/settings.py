"""Deployment-tier settings, read from environment variables when definitions are built.

The embedded tier needs none of them: everything defaults to files under `./data`. A team or
production tier sets the variables below (a Spark master, a PostgreSQL/REST catalog, an S3 warehouse)
and changes no code.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

DATA_DIR_ENV = "BACKFILL_PLATFORM_DATA"
# The former flat spec folders' variable: no longer read, refused when set (`components/registry.py`).
SPECS_ENV = "BACKFILL_PLATFORM_SPECS"
SPARK_MASTER_ENV = "BACKFILL_PLATFORM_SPARK_MASTER"
CATALOG_NAME_ENV = "BACKFILL_PLATFORM_CATALOG_NAME"
# The Iceberg catalog's name unless CATALOG_NAME_ENV says otherwise (Spark, PyIceberg and the bench alike).
DEFAULT_CATALOG_NAME = "lake"
# An Iceberg REST catalog's endpoint (http(s)://…); its bearer token or OAuth2 client credentials.
CATALOG_URI_ENV = "BACKFILL_PLATFORM_CATALOG_URI"
CATALOG_TOKEN_ENV = "BACKFILL_PLATFORM_CATALOG_TOKEN"
CATALOG_CREDENTIAL_ENV = "BACKFILL_PLATFORM_CATALOG_CREDENTIAL"
# The catalog database's user and password (a JDBC catalog on PostgreSQL).
CATALOG_USER_ENV = "BACKFILL_PLATFORM_CATALOG_USER"
CATALOG_PASSWORD_ENV = "BACKFILL_PLATFORM_CATALOG_PASSWORD"
CATALOG_JDBC_URI_ENV = "BACKFILL_PLATFORM_CATALOG_JDBC_URI"
CATALOG_SQL_URI_ENV = "BACKFILL_PLATFORM_CATALOG_SQL_URI"
WAREHOUSE_ENV = "BACKFILL_PLATFORM_WAREHOUSE"
ICEBERG_JARS_ENV = "BACKFILL_PLATFORM_ICEBERG_JARS"
# Kafka's bootstrap servers (host:port,…) for a replay to a backfill topic; SASL credentials if it wants them.
KAFKA_BOOTSTRAP_ENV = "BACKFILL_PLATFORM_KAFKA_BOOTSTRAP"
# Path-style S3 addressing for an s3:// warehouse: true/false (default true when an endpoint is set).
S3_PATH_STYLE_ENV = "BACKFILL_PLATFORM_S3_PATH_STYLE"
# What a stream's archive may read is the operator's decision, never a spec's: the folders (separated by
# `:`) a local archive location may resolve into besides the data directory, and the S3 buckets (or
# `bucket/prefix`, separated by `,` or whitespace) an `s3://` location may name (unset: none).
ARCHIVE_ROOTS_ENV = "BACKFILL_PLATFORM_ARCHIVE_ROOTS"
ARCHIVE_S3_BUCKETS_ENV = "BACKFILL_PLATFORM_ARCHIVE_S3_BUCKETS"


def data_dir() -> Path:
    """Root of the embedded tier's runtime state (catalog, warehouse, archive, Dagster storage)."""
    return Path(os.environ.get(DATA_DIR_ENV, "data")).resolve()


def archive_roots() -> list[Path]:
    """Where a local archive may be: the data directory and the folders of ARCHIVE_ROOTS_ENV, resolved."""
    extra = [Path(p.strip()) for p in os.environ.get(ARCHIVE_ROOTS_ENV, "").split(os.pathsep) if p.strip()]
    return [data_dir(), *(p.resolve() for p in extra)]


def archive_s3_prefixes() -> list[tuple[str, str]]:
    """(bucket, key prefix without `/` at either end; "" for the whole bucket) of ARCHIVE_S3_BUCKETS_ENV."""
    entries = os.environ.get(ARCHIVE_S3_BUCKETS_ENV, "").replace(",", " ").split()
    allowed = []
    for entry in entries:
        bucket, _, prefix = entry.removeprefix("s3://").partition("/")
        allowed.append((bucket, prefix.strip("/")))
    return allowed


def warehouse_location() -> str:
    """The warehouse the platform writes its tables to, as configured ("" when a REST catalog's server
    decides it): WAREHOUSE_ENV, else the embedded tier's folder under the data directory."""
    default = "" if os.environ.get(CATALOG_URI_ENV, "").strip() else f"file://{data_dir()}/warehouse"
    return env_or(WAREHOUSE_ENV, default)


def env_or(name: str, default: str) -> str:
    value = os.environ.get(name, "").strip()
    return value or default


def first_env(*names: str) -> str:
    """The first of `names` set to a non-blank value, stripped ("" when none is)."""
    return next((os.environ[n].strip() for n in names if os.environ.get(n, "").strip()), "")


def s3_endpoint() -> str:
    """The S3 endpoint of the standard AWS variables (an S3-compatible store's), "" for AWS's own."""
    return first_env("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")


def aws_region() -> str:
    """The region of the standard AWS variables, "" when unset (the SDKs' own chain decides)."""
    return first_env("AWS_REGION", "AWS_DEFAULT_REGION")


def flag(name: str, default: bool) -> bool:
    """A true/false variable (also 1/0, yes/no); unset or empty is `default`, anything else raises."""
    value = os.environ.get(name, "").strip().lower()
    if not value:
        return default
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no"):
        return False
    raise ValueError(f"{name} must be true or false, not {os.environ[name]!r}")


def now() -> datetime:
    """The platform's clock (UTC). Tests replace it to put themselves before or after a day settles."""
    return datetime.now(UTC)
