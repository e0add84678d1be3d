"""What one stream's spec can never reach: another stream's data, the platform's tables, a live topic.

Specs are data written by many teams and run with the platform's credentials, so a spec cannot name:
- as its archive table (`archive.iceberg_table`, on the platform's catalog), a table of a namespace the
  platform writes: `raw` (every stream's events and quarantine tables), `shadow`, `prod` and `platform`
  (the ledgers). Copying another stream's validated events into one's own is refused at load;
- as a replay target (`backfill_kafka_topics`, `backfill_kinesis_streams`), the live topic or stream of
  any stream: its own `live_*` field, another stream's, or the topic another stream's archive is written
  from (`archive.kafka_connect.topic`, `archive.kafka_metadata.topic`). Checked across every spec of the
  code location when it loads (`isolation_problems`), and again by each replay against the live targets
  of every spec the platform knows (`live_targets`).
Where a local or S3 archive may be is the operator's decision (`settings.archive_roots`,
`settings.archive_s3_prefixes`), see `archive_location.py`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

# A `stream.StreamSpec` (which imports this module: not named here, so the specs stay acyclic).
StreamSpec = Any

RAW_NAMESPACE = "raw"
SHADOW_NAMESPACE = "shadow"
PROD_NAMESPACE = "prod"
PLATFORM_NAMESPACE = "platform"
# Every namespace the platform writes tables into (lakehouse/tables.py names them from here).
PLATFORM_NAMESPACES = (RAW_NAMESPACE, SHADOW_NAMESPACE, PROD_NAMESPACE, PLATFORM_NAMESPACE)

Sink = Literal["kafka", "kinesis"]


def check_archive_table(identifier: str) -> str:
    """Refuse an archive table (`namespace.table` of the platform's catalog) the platform itself writes."""
    namespace = identifier.split(".", 1)[0]
    if namespace in PLATFORM_NAMESPACES:
        raise ValueError(
            f"archive table {identifier!r} is in the namespace {namespace!r}, which the "
            f"platform writes (its namespaces: {', '.join(PLATFORM_NAMESPACES)}: every stream's events and "
            "quarantine, shadows, production tables, ledgers); an archive is a table the platform only "
            "reads, e.g. the one a Kafka Connect sink lands"
        )
    return identifier


def live_targets(streams: Iterable[StreamSpec], sink: Sink) -> dict[str, str]:
    """Every live Kafka topic (or Kinesis stream) the specs name, with whose it is, e.g.
    `{"playback": "the live Kafka topic of stream 'playback'"}`."""
    live: dict[str, str] = {}
    for stream in streams:
        if sink == "kinesis":
            named = [(stream.live_kinesis_stream, "live_kinesis_stream")]
        else:
            offsets = stream.archive.kafka_offsets
            named = [
                (stream.live_kafka_topic, "live_kafka_topic"),
                (offsets.topic if offsets is not None else None, "the topic its archive is written from"),
            ]
        for name, why in named:
            if name is not None:
                kind = "Kinesis stream" if sink == "kinesis" else "Kafka topic"
                live.setdefault(name, f"a live {kind} of stream {stream.name!r} ({why})")
    return live


def isolation_problems(spec: StreamSpec, streams: Mapping[str, StreamSpec]) -> list[tuple[str, str]]:
    """(field, reason) for each replay target of `spec` that is a live one of any of `streams`."""
    problems = []
    for sink, field, targets in (
        ("kafka", "backfill_kafka_topics", spec.backfill_kafka_topics),
        ("kinesis", "backfill_kinesis_streams", spec.backfill_kinesis_streams),
    ):
        live = live_targets([spec, *streams.values()], sink)
        for index, target in enumerate(targets):
            if target in live:
                problems.append(
                    (
                        f"{field}[{index}]",
                        f"{target!r} is {live[target]}: a replay never writes to a live one",
                    )
                )
    return problems
