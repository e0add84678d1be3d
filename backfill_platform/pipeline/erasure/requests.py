"""Erasure requests: an Iceberg table of the subjects who asked to be erased, keyed-hashed.

`platform.erasure_requests` holds one row per request: its id, the subject's keyed hash (HMAC-SHA256 with
the platform's erasure key), its scope (a stream's name, or `*` for every stream), when it was filed and
why. Any tool can read it; none can read who is in it. The table stores a keyed hash, not the subject:
a list of the people who asked to be forgotten is itself personal data, and an unkeyed hash of a user id
or an e-mail address is reversed by hashing every candidate. With the key, a run recognises a subject's
records by hashing each record's subject (`subject_hash`, inside Spark) and looking the hash up.

The key is a secret: `BACKFILL_PLATFORM_ERASURE_KEY` on shared tiers; on the embedded default, a random
key kept in the data folder (`erasure.key`, mode 600), made on first use. The table records a check value
of the key it was filed with (`KEY_CHECK_PROPERTY`): a run holding another key would recognise nobody, and
is refused instead (`ErasureKeyError`).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from pyspark.errors import AnalysisException
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

from backfill_platform import settings
from backfill_platform.lakehouse.snapshots import current_snapshot_id
from backfill_platform.lakehouse.tables import (
    PLATFORM_NAMESPACE,
    ensure_table,
    read_at,
    table_exists,
    table_id,
)

REQUESTS_TABLE = "erasure_requests"
REQUEST_COLUMNS = [
    ("request_id", "string"),
    ("subject_hash", "string"),
    ("scope", "string"),
    ("requested_at", "timestamp"),
    ("reason", "string"),
]
ALL_STREAMS = "*"
KEY_ENV = "BACKFILL_PLATFORM_ERASURE_KEY"
KEY_FILE = "erasure.key"
KEY_CHECK_PROPERTY = "backfill_platform.erasure-key-check"
# The snapshot of the requests a write honored, on the write's Iceberg snapshot and its ledger rows.
HONORED_PROPERTY = "backfill_platform.erasure-requests-snapshot"
# Spark prints a binary literal as `0x` and its hex: the padded key is 64 bytes. Plans
# shown in Spark's UI, its event log and `explain` are redacted by this pattern (`subject_hash` sets it).
KEY_LITERAL_REDACTION = "(?i)0x[0-9a-f]{128}"
_BLOCK = 64  # SHA-256's block size: the HMAC key is padded to it
HMAC_SUBJECT_CLASS = "backfill_platform.functions.HmacSubject"
_HMAC_FUNCTION = "backfill_hmac_subject"


class ErasureKeyError(RuntimeError):
    """The erasure key is missing, or not the one the requests were hashed with."""


def erasure_key() -> bytes:
    """The platform's erasure key: `BACKFILL_PLATFORM_ERASURE_KEY`, else the embedded tier's key file (made
    on first use). Surrounding whitespace is not part of it (a key read from a secret file ends in a newline)."""
    value = os.environ.get(KEY_ENV, "").strip()
    if value:
        return value.encode()
    path = settings.data_dir() / KEY_FILE
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        # Created with its mode, never readable by others for a moment; a concurrent first use loses the race
        # and reads the winner's key.
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(descriptor, "w") as handle:
                handle.write(secrets.token_hex(32) + "\n")
    key = path.read_text().strip()
    if not key:
        raise ErasureKeyError(f"the erasure key file {path} is empty: set {KEY_ENV} or remove the file")
    return key.encode()


def key_check(key: bytes) -> str:
    """A value that tells keys apart without revealing them: the key's HMAC of a fixed text."""
    return hmac.new(key, b"backfill_platform erasure key check", hashlib.sha256).hexdigest()[:16]


def hash_subject(subject: str, key: bytes) -> str:
    """A subject's keyed hash, as the requests table stores it (hex HMAC-SHA256 of its UTF-8 text)."""
    return hmac.new(key, subject.encode(), hashlib.sha256).hexdigest()


def subject_hash(value: Column, key: bytes) -> Column:
    """`hash_subject` of each row's `value` (text), computed inside Spark by the platform's JVM function
    (`lakehouse/jvm/functions/HmacSubject.java`: one `Mac` per task thread, no Python per row). The key is a
    literal of the plan, padded to SHA-256's block (the same HMAC): the session's plan redaction hides it
    (`KEY_LITERAL_REDACTION`) from `explain`, Spark's UI and its event log."""
    spark = SparkSession.getActiveSession()
    if spark is None:
        raise RuntimeError("subject_hash needs an active Spark session")
    spark.conf.set("spark.sql.redaction.string.regex", KEY_LITERAL_REDACTION)
    try:
        spark.udf.registerJavaFunction(_HMAC_FUNCTION, HMAC_SUBJECT_CLASS, StringType())
    except AnalysisException as error:
        raise RuntimeError(
            f"the platform's JVM functions are not on this Spark session's classpath ({HMAC_SUBJECT_CLASS}): "
            "sessions get them from `lakehouse.jars.functions_jar()` (`make jars` builds it)"
        ) from error
    if len(key) > _BLOCK:
        key = hashlib.sha256(key).digest()
    return F.call_udf(_HMAC_FUNCTION, value, F.lit(bytearray(key.ljust(_BLOCK, b"\0"))))


def requests_table(spark: SparkSession) -> str:
    return table_id(spark, PLATFORM_NAMESPACE, REQUESTS_TABLE)


def ensure_requests(spark: SparkSession, key: bytes) -> str:
    """Create the requests table (recording the key's check value), or verify the key against it."""
    identifier = requests_table(spark)
    if not table_exists(spark, identifier):
        ensure_table(spark, identifier, REQUEST_COLUMNS, properties={KEY_CHECK_PROPERTY: key_check(key)})
    _verify_key(spark, identifier, key)
    return identifier


def _verify_key(spark: SparkSession, identifier: str, key: bytes) -> None:
    rows = spark.sql(f"SHOW TBLPROPERTIES {identifier} ('{KEY_CHECK_PROPERTY}')").collect()
    recorded = rows[0]["value"] if rows else ""
    if recorded.startswith("Table ") or not recorded:  # Spark's answer for a property the table lacks
        spark.sql(f"ALTER TABLE {identifier} SET TBLPROPERTIES ('{KEY_CHECK_PROPERTY}' = '{key_check(key)}')")
        return
    if recorded != key_check(key):
        raise ErasureKeyError(
            f"the erasure key ({KEY_ENV}, else {KEY_FILE} in the data folder) is not the key the requests in "
            f"{identifier} were filed with (check value {recorded}, this key's {key_check(key)}): with it no "
            "requested subject would be recognised, so nothing is read or written; set the key they were "
            "filed with"
        )


@dataclass(frozen=True)
class Requests:
    """The requests a run honors: those of one snapshot of the table that apply to one stream (or all)."""

    snapshot_id: int | None  # None: no request was ever filed
    hashes: frozenset[str]
    request_ids: dict[str, list[str]]  # subject hash -> the ids of its requests

    def __bool__(self) -> bool:
        return bool(self.hashes)

    def property(self) -> dict[str, str]:
        """What a write records of the requests it honored (the snapshot, `none` when none was ever filed)."""
        return {HONORED_PROPERTY: str(self.snapshot_id) if self.snapshot_id is not None else "none"}


NO_REQUESTS = Requests(None, frozenset(), {})


def requests_for(
    spark: SparkSession, stream: str | None, snapshot_id: int | None = None, key: bytes | None = None
) -> Requests:
    """The requests for `stream` (its own and those for every stream; every request when None) as of
    `snapshot_id` (default: the table's current snapshot). No table yet: no request (and no key needed)."""
    identifier = requests_table(spark)
    if not table_exists(spark, identifier):
        return NO_REQUESTS
    _verify_key(spark, identifier, key or erasure_key())
    snapshot = snapshot_id if snapshot_id is not None else current_snapshot_id(spark, identifier)
    if snapshot is None:
        return NO_REQUESTS
    rows = read_at(spark, identifier, snapshot)
    if stream is not None:
        rows = rows.where(F.col("scope").isin(stream, ALL_STREAMS))
    ids: dict[str, list[str]] = {}
    for row in rows.select("subject_hash", "request_id").collect():
        ids.setdefault(row["subject_hash"], []).append(row["request_id"])
    return Requests(snapshot, frozenset(ids), {h: sorted(r) for h, r in ids.items()})


def honored_property(spark: SparkSession) -> dict[str, str]:
    """`Requests.property` of the requests table's current snapshot, without reading the requests."""
    identifier = requests_table(spark)
    snapshot = current_snapshot_id(spark, identifier) if table_exists(spark, identifier) else None
    return {HONORED_PROPERTY: str(snapshot) if snapshot is not None else "none"}


@dataclass(frozen=True)
class Filed:
    request_id: str
    subject_hash: str
    scope: str


def file_requests(
    spark: SparkSession,
    subjects: Iterable[str],
    scope: str,
    reason: str,
    request_id: str | None = None,
    key: bytes | None = None,
) -> tuple[list[Filed], int | None]:
    """Append one request per subject (one commit); return them and the table's new snapshot.

    A subject already requested for the same scope is not filed twice (the earlier request stands)."""
    key = key or erasure_key()
    identifier = ensure_requests(spark, key)
    wanted = {hash_subject(s, key) for s in subjects if s}
    existing = {
        row["subject_hash"]
        for row in spark.table(identifier).where(F.col("scope") == scope).select("subject_hash").collect()
    }
    new = sorted(wanted - existing)
    now = datetime.now(UTC)
    filed = [Filed(_request_id(request_id, i, len(new)), h, scope) for i, h in enumerate(new, 1)]
    if filed:
        rows = [(f.request_id, f.subject_hash, f.scope, now, reason) for f in filed]
        schema = ", ".join(f"{name} {kind}" for name, kind in REQUEST_COLUMNS)
        spark.createDataFrame(rows, schema).writeTo(identifier).append()
    return filed, current_snapshot_id(spark, identifier)


def _request_id(given: str | None, number: int, count: int) -> str:
    """The id the caller gave (a ticket), numbered when it files several subjects; else a new one."""
    if not given:
        return f"er-{uuid.uuid4().hex[:16]}"
    return given if count == 1 else f"{given}-{number}"
