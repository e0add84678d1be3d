"""Recognise the records of requested subjects: the `_erased` mark every re-derivation and replay honors."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from backfill_platform.pipeline.erasure.requests import Requests, erasure_key, subject_hash
from backfill_platform.specs.stream import StreamSpec


def mark_erased(
    records: DataFrame, spec: StreamSpec, requests: Requests, subject: str = "_subject"
) -> DataFrame:
    """`records` with `_erased`: the record's subject (column `subject`, text) has a request in `requests`.

    Without requests (or a `subject_field`) the mark is a constant false and costs nothing. With them, each
    record's subject is hashed with the erasure key in the JVM (`subject_hash`) and looked up in the
    requests' hashes, broadcast to every task as a small table: a join's hash map, not a literal list in
    the plan (Catalyst walks a 10,000-value `isin` in every rule of every query, and its plans print it)."""
    if not requests or spec.subject_field is None:
        return records.withColumn("_erased", F.lit(False))
    spark = records.sparkSession
    hashes = spark.createDataFrame([(h,) for h in sorted(requests.hashes)], "_request_hash string")
    hashed = records.withColumn("_subject_hash", subject_hash(F.col(subject), erasure_key()))
    return (
        hashed.join(F.broadcast(hashes), hashed["_subject_hash"] == hashes["_request_hash"], "left")
        .withColumn("_erased", F.col("_request_hash").isNotNull())
        .drop("_subject_hash", "_request_hash")
    )


def is_requested(value: Column, requests: Requests, key: bytes | None = None) -> Column:
    """True for a row whose subject (`value`, text) has a request in `requests`; never null. For the
    operator's commands on a table (clean, audit, revert), where the requests are a literal of one query;
    a run's pass over every record joins them instead (`mark_erased`). `key`: the erasure key, when the
    caller holds it already."""
    hashed = subject_hash(value, key or erasure_key())
    return F.coalesce(value.isNotNull() & hashed.isin(sorted(requests.hashes)), F.lit(False))


def erasure_coverage(stream: StreamSpec) -> str:
    """One line on whether re-derivations of `stream` honor erasure requests, for `plan` and `status`."""
    if stream.subject_field is None:
        return (
            f"erasure: {stream.name} is not covered: it declares no subject_field, so its re-derivations and "
            "replays cannot tell whose records they are"
        )
    return (
        f"erasure: {stream.name}'s records are matched on `{stream.subject_field}`; those of subjects with a "
        "request are erased by every re-derivation and replay"
    )
