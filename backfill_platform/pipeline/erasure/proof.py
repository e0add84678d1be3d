"""The proof, per run and day: no row of a subject with an erasure request reached a shadow or production.

`erasure_honored` is a blocking check of every shadow (and of production, for datasets that hold the
subject): it hashes the subject column of the day's rows, and of the source events the run read, and looks
the hashes up in the requests as of now. A dataset whose table holds no subject column is covered by
re-derivation: its check proves that the events it was computed from held none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dagster import MetadataValue
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from backfill_platform.pipeline.erasure.requests import (
    Requests,
    erasure_key,
    honored_property,
    requests_for,
    subject_hash,
)
from backfill_platform.pipeline.validation.verdicts import PartitionVerdict
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.grain import value_key
from backfill_platform.specs.stream import StreamSpec

ERASURE_HONORED = "erasure_honored"
SHADOW_DESCRIPTION = (
    "no row of a subject with an erasure request, as of the requests now: in the shadow's days (when its "
    "table holds the source's subject column) and in the source events the run read"
)
PRODUCTION_DESCRIPTION = "production's promoted days hold no row of a subject with an erasure request"
_NAMED_REQUESTS = 20  # request ids a failing verdict names, at most


def held_subject_column(spec: DatasetSpec, sources: Sequence[StreamSpec]) -> tuple[str, StreamSpec] | None:
    """The subject column the dataset's table holds (a source's `subject_column` among its columns)."""
    for stream in sources:
        if stream.subject_column and stream.subject_column in spec.columns:
            return stream.subject_column, stream
    return None


def _hits(df: DataFrame, column: str, requests: Requests, group: Column | None) -> dict:
    """Rows of `df` whose `column` is a requested subject: {group value: (rows, [subject hashes])}."""
    hashed = subject_hash(F.col(column).cast("string"), erasure_key())
    matched = df.select((group if group is not None else F.lit("all")).alias("_g"), hashed.alias("_h")).where(
        F.col("_h").isin(sorted(requests.hashes))
    )
    rows = (
        matched.groupBy("_g").agg(F.count(F.lit(1)).alias("n"), F.collect_set("_h").alias("hashes")).collect()
    )
    return {row["_g"]: (row["n"], row["hashes"]) for row in rows}


def _request_ids(requests: Requests, hashes: list[str]) -> str:
    ids = sorted({i for h in hashes for i in requests.request_ids.get(h, [])})
    more = f" and {len(ids) - _NAMED_REQUESTS} more" if len(ids) > _NAMED_REQUESTS else ""
    return ", ".join(ids[:_NAMED_REQUESTS]) + more


def shadow_erasure_verdicts(
    spark: SparkSession,
    spec: DatasetSpec,
    sources: Sequence[StreamSpec],
    table: DataFrame,
    table_day: Column,
    source_events: Mapping[str, DataFrame],
    days: list[str],
) -> list[PartitionVerdict]:
    """`erasure_honored` for each day of a shadow run: `table` is the shadow's rows of the run (`table_day`
    their day key), `source_events` each source's events as the run read them."""
    requests = {s.name: requests_for(spark, s.name) for s in sources if s.subject_field}
    uncovered = sorted(s.name for s in sources if not s.subject_field)
    held = held_subject_column(spec, sources)
    in_table: dict = {}
    if held is not None and requests[held[1].name]:
        in_table = {
            value_key(k): v for k, v in _hits(table, held[0], requests[held[1].name], table_day).items()
        }
    # The events read serve every day of the run (a day's lookback reads its neighbours'): counted as one.
    in_events = {
        name: _hits(source_events[name], stream.subject_column, requests[name], None).get("all", (0, []))
        for name, stream in ((s.name, s) for s in sources if s.subject_field)
        if requests[name] and name in source_events
    }
    events_rows = sum(n for n, _ in in_events.values())
    snapshots = ", ".join(f"{name} {r.snapshot_id or 'none'}" for name, r in sorted(requests.items()))
    verdicts = []
    for day in days:
        rows, hashes = in_table.get(day, (0, []))
        problems = []
        if rows:
            problems.append(
                f"{rows} shadow rows of requested subjects ({_request_ids(requests[held[1].name], hashes)})"
            )
        for name, (n, found) in sorted(in_events.items()):
            if n:
                problems.append(
                    f"{n} {name} events read of requested subjects ({_request_ids(requests[name], found)}): "
                    "re-materialize those events"
                )
        metadata = {
            "subject_column": held[0] if held else "none: covered by re-derivation from the events",
            "table_rows_of_requested_subjects": rows,
            "source_events_of_requested_subjects": events_rows,
            "requests_snapshots": snapshots or "none",
            "not_covered": ", ".join(uncovered) or "none",
            "problem": MetadataValue.text("; ".join(problems) or "none"),
        }
        verdicts.append(PartitionVerdict(ERASURE_HONORED, day, not problems, metadata))
    return verdicts


def production_erasure_verdicts(
    spark: SparkSession,
    spec: DatasetSpec,
    sources: Sequence[StreamSpec],
    table: DataFrame,
    table_day: Column,
    days: list[str],
) -> list[PartitionVerdict]:
    """`erasure_honored` of production's promoted days (datasets holding the subject column only)."""
    held = held_subject_column(spec, sources)
    assert held is not None, "only datasets that hold a subject column have the production check"
    column, stream = held
    requests = requests_for(spark, stream.name)
    hits = {value_key(k): v for k, v in _hits(table, column, requests, table_day).items()} if requests else {}
    verdicts = []
    for day in days:
        rows, hashes = hits.get(day, (0, []))
        metadata = {
            "subject_column": column,
            "rows_of_requested_subjects": rows,
            "requests_snapshot": str(requests.snapshot_id or "none"),
            "requests": MetadataValue.text(_request_ids(requests, hashes) or "none"),
        }
        verdicts.append(PartitionVerdict(ERASURE_HONORED, day, rows == 0, metadata))
    return verdicts


def honored_requests(spark: SparkSession, sources: Sequence[StreamSpec]) -> dict[str, str]:
    """The snapshot property of a shadow's or production's commit: the requests snapshot it honors (the
    requests table's current one; `none` when no request was ever filed), when a source is covered."""
    if not any(s.subject_field for s in sources):
        return {}
    return honored_property(spark)
