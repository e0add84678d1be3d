"""A catalog that refuses to create a table, explained: which catalog, which table, where it would go, why.

The preflight (`preflight.py`) proves the catalog answers and the configured warehouse's bucket exists. It
cannot prove the catalog may write where it puts tables: a REST catalog's server decides the location from
its own warehouse (Iceberg's reference server ignores the client's `warehouse`), with its own credentials.
When that storage is missing or forbidden, the first `CREATE TABLE` fails with a server error buried in a
Java stack trace. It fails before any data is written (the platform creates its tables before it writes),
and is re-raised here as a `LakehouseConfigError` that names the setting, the endpoint and the location,
masked (the server's words may echo the request's headers), without the Java error it replaces.
"""

from __future__ import annotations

import re

from pyspark.sql import SparkSession

from backfill_platform import settings
from backfill_platform.lakehouse.preflight import LakehouseConfigError

# Errors by which a catalog or its storage refuses a write (Iceberg's REST client and S3FileIO, AWS SDK v2).
_REFUSAL = re.compile(
    r"(?:org\.apache\.iceberg\.exceptions\.(?:ServiceFailureException|ForbiddenException|"
    r"NotAuthorizedException|RESTException|BadRequestException|RuntimeIOException)"
    r"|software\.amazon\.awssdk\.\S*(?:S3Exception|SdkClientException)): (?P<reason>[^\n]*)"
)


def refusal_reason(error: BaseException) -> str | None:
    """The catalog's or the storage's own words, when `error` is such a refusal; None otherwise."""
    found = _REFUSAL.search(str(error))
    return found.group("reason").strip() if found else None


def explain_refusal(spark: SparkSession, identifier: str, reason: str) -> LakehouseConfigError:
    """The error to raise when the catalog refused to create `identifier` (`<catalog>.<ns>.<name>`)."""
    catalog, namespace = identifier.split(".")[:2]
    prefix = f"spark.sql.catalog.{catalog}"
    uri = spark.conf.get(f"{prefix}.uri", "") or ""
    warehouse = spark.conf.get(f"{prefix}.warehouse", "") or ""
    is_rest = spark.conf.get(f"{prefix}.type", "") == "rest"
    where = (
        f"the Iceberg REST catalog at {uri} ({settings.CATALOG_URI_ENV})"
        if is_rest
        else f"the catalog {catalog!r} ({settings.CATALOG_JDBC_URI_ENV}) with the warehouse {warehouse}"
    )
    location = _namespace_location(spark, f"{catalog}.{namespace}")
    placed = f"; it puts the tables of {namespace!r} under {location}" if location else ""
    configured = f" ({settings.WAREHOUSE_ENV} here: {warehouse or 'unset'})" if is_rest else ""
    secrets = (
        spark.conf.get(f"{prefix}.{key}", "") or "" for key in ("token", "credential", "jdbc.password")
    )
    return LakehouseConfigError(
        f"{where} refused to create {identifier}: {reason}{placed}. The catalog decides where its tables "
        f"go{configured}: check that its warehouse exists and that the catalog's credentials may write there.",
        secrets,
    )


def _namespace_location(spark: SparkSession, namespace: str) -> str:
    """The namespace's `location` property as the catalog reports it ("" when it has none or says nothing)."""
    try:
        rows = spark.sql(f"DESCRIBE NAMESPACE EXTENDED {namespace}").collect()
    except Exception:  # the explanation must not hide the refusal it explains
        return ""
    for row in rows:
        name, value = row[0], row[1]
        if name == "Location" and value:
            return str(value)
        if name == "Properties" and "location," in str(value):
            found = re.search(r"\(location,([^)]*)\)", str(value))
            if found:
                return found.group(1)
    return ""
