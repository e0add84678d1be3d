"""Is the configured lakehouse reachable? Asked once before a Spark session starts, so that a wrong setting
fails a run before anything is read or written, with an error naming the setting and the endpoint.

Spark would find out too, but late and obscurely: an unreachable REST catalog surfaces at the first table
access as a retried `RESTException`, and a missing bucket as a `NoSuchBucketException` in the middle of
the first write (after the archive was read). Checked here:

- a REST catalog answers `GET /v1/config` (a refused bearer token is named as such);
- an `s3://` warehouse's bucket exists and the AWS credentials of the default chain may see it
  (`HeadBucket` through boto3, at the endpoint and region the catalog's S3FileIO will use).

The error is raised in a run, where Dagster stores its text: a `LakehouseConfigError` masks its message as it
is made (`masking.mask`: URL userinfo, bearer tokens, the catalog's secrets), and a catalog's error body is
never quoted unmasked (one that echoes the request's headers would hand back the token).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable
from typing import Protocol

from backfill_platform import settings
from backfill_platform.masking import mask

TIMEOUT_SECONDS = 10.0


class CatalogSettings(Protocol):
    """What the checks read of a catalog's settings (`resources.IcebergCatalogResource` has it all): the
    resources build on these checks, not the other way round."""

    rest_uri: str
    rest_token: str | None
    rest_credential: str | None
    warehouse: str
    s3_endpoint: str
    s3_region: str
    s3_path_style: bool

    @property
    def is_rest(self) -> bool: ...

    def check(self) -> None:
        """Raises ValueError naming a setting that contradicts another."""


class LakehouseConfigError(RuntimeError):
    """The lakehouse settings do not reach a usable catalog or warehouse; the message names which, masked
    (`masking.mask`, and `secrets` besides) before anything can print or store it."""

    def __init__(self, message: str, secrets: Iterable[str | None] = ()) -> None:
        super().__init__(mask(message, [secret for secret in secrets if secret]))


def check_lakehouse(catalog: CatalogSettings, timeout: float = TIMEOUT_SECONDS) -> None:
    """Raises LakehouseConfigError when the catalog or the warehouse's bucket cannot be used."""
    try:
        catalog.check()
    except ValueError as error:
        raise LakehouseConfigError(str(error)) from None
    if catalog.is_rest:
        check_rest_catalog(catalog, timeout)
    if catalog.warehouse.startswith("s3://"):
        check_s3_warehouse(catalog, timeout)


def check_rest_catalog(catalog: CatalogSettings, timeout: float) -> None:
    url = catalog.rest_uri.rstrip("/") + "/v1/config"
    if catalog.warehouse:
        url += "?" + urllib.parse.urlencode({"warehouse": catalog.warehouse})
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    if catalog.rest_token:
        request.add_header("Authorization", f"Bearer {catalog.rest_token}")
    where = f"the Iceberg REST catalog at {catalog.rest_uri} ({settings.CATALOG_URI_ENV})"
    secrets = (catalog.rest_token, catalog.rest_credential)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read()
    except urllib.error.HTTPError as error:
        if error.code in (401, 403) and catalog.rest_credential and not catalog.rest_token:
            return  # OAuth2 client credentials: Iceberg's clients exchange them for a token first
        if error.code in (401, 403):
            raise LakehouseConfigError(
                f"{where} refused the request (HTTP {error.code}): set {settings.CATALOG_TOKEN_ENV} or "
                f"{settings.CATALOG_CREDENTIAL_ENV} to credentials it accepts"
            ) from None
        # The body is the server's: one that echoes the request's headers holds the token (masked).
        detail = error.read()[:300].decode(errors="replace")
        raise LakehouseConfigError(
            f"{where} answered HTTP {error.code} to GET {url}: {detail}", secrets
        ) from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise LakehouseConfigError(f"{where} cannot be reached: {reason}", secrets) from None
    except ValueError as error:  # a header or URL http.client refuses (it quotes the value)
        raise LakehouseConfigError(f"{where} cannot be asked: {error}", secrets) from None
    try:
        json.loads(body)
    except ValueError:
        raise LakehouseConfigError(
            f"{where} is not an Iceberg REST catalog: GET {url} answered {body[:200]!r}", secrets
        ) from None


def check_s3_warehouse(catalog: CatalogSettings, timeout: float) -> None:
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

    bucket = catalog.warehouse.removeprefix("s3://").split("/", 1)[0]
    endpoint = catalog.s3_endpoint or None
    where = (
        f"the warehouse {catalog.warehouse} ({settings.WAREHOUSE_ENV}), bucket {bucket!r} at "
        f"{endpoint or 'AWS S3'} (AWS_ENDPOINT_URL)"
    )
    # A new session: boto3's default one keeps the credentials it first found, not the environment's now.
    client = boto3.session.Session().client(
        "s3",
        endpoint_url=endpoint,
        region_name=catalog.s3_region or None,
        config=Config(
            connect_timeout=timeout,
            read_timeout=timeout,
            retries={"max_attempts": 2},
            s3={"addressing_style": "path" if catalog.s3_path_style else "auto"},
        ),
    )
    try:
        client.head_bucket(Bucket=bucket)
    except NoCredentialsError:
        raise LakehouseConfigError(
            f"no AWS credentials for {where}: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile "
            "(AWS_PROFILE) or a role"
        ) from None
    except ClientError as error:
        code = str(error.response.get("Error", {}).get("Code", ""))
        if code in ("404", "NoSuchBucket", "NotFound"):
            raise LakehouseConfigError(f"{where}: the bucket does not exist") from None
        if code in ("403", "AccessDenied", "Forbidden"):
            raise LakehouseConfigError(f"{where}: access denied to these AWS credentials") from None
        raise LakehouseConfigError(f"{where}: {error}") from None
    except BotoCoreError as error:
        raise LakehouseConfigError(f"{where} cannot be reached: {error}") from None
