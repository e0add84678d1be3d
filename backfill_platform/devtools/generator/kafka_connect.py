"""A Kafka Connect S3 sink archive of playback events, and its exact truth.

The sink's layout: `<root>/year=YYYY/month=MM/day=dd/hour=HH/<topic>+<partition>+<startOffset>.<ext>`
(the offset zero-padded to 10 digits), one folder per ingestion hour (wall-clock partitioner), each
file holding one Kafka partition's records from its start offset on, contiguously, at most
`flush_size` of them. Events are spread over the partitions by a hash of their id; a low volume leaves
many hours of a partition without a file, which is normal here: the offsets prove what is missing.

The events follow the playback stream's schemas (version 1 on the first day, then version 2 with epoch
milliseconds), some arrive up to two hours late, and some are sent twice (a producer retry: the same
payload at a later offset). The truth records each kept event's partition and offset (its first copy).
"""

from __future__ import annotations

import json
import random
import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

HOUR = timedelta(hours=1)
LAYOUT = "year=%Y/month=%m/day=%d/hour=%H"


@dataclass
class KafkaConnectTruth:
    """What the archive holds: per event id its (partition, offset, event day), and its files."""

    events: dict[str, tuple[int, int, str]] = field(default_factory=dict)
    files: list[tuple[str, int, int, int]] = field(default_factory=list)  # name, partition, start, count
    records: int = 0
    duplicates: int = 0

    def add(self, record: dict, partition: int, offset: int, end: date) -> None:
        """One record read at (partition, offset): kept if its id is new and its day before `end`."""
        day = _event_day(record)
        if record["event_id"] in self.events:
            self.duplicates += 1
        elif day < end.isoformat():
            self.events[record["event_id"]] = (partition, offset, day)
        self.records += 1

    def written_per_day(self) -> dict[str, int]:
        days: dict[str, int] = defaultdict(int)
        for _partition, _offset, day in self.events.values():
            days[day] += 1
        return dict(days)


def _record(event_id: str, at: datetime, version: int, rng: random.Random) -> dict:
    body = {"event_id": event_id, "user_id": f"u{rng.randrange(50)}", "title_id": f"t{rng.randrange(20)}"}
    body["event_type"] = rng.choice(["start", "pause", "stop"])
    body["position_sec"] = rng.randrange(3600)
    if version == 1:
        return {**body, "event_time": at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z",
                "device": rng.choice(["tv", "mobile"])}  # fmt: skip
    return {**body, "schema_version": 2, "event_time": int(at.timestamp() * 1000),
            "device_type": rng.choice(["tv", "web"]), "country": rng.choice(["US", "BR"])}  # fmt: skip


def generate_kafka_connect_archive(
    root: Path,
    start: date,
    days: int,
    events_per_day: int,
    *,
    topic: str = "playback",
    partitions: int = 3,
    flush_size: int = 40,
    fmt: str = "parquet",
    seed: int = 3,
) -> KafkaConnectTruth:
    """Write the archive under `root` (`fmt`: `parquet` or `json`, Kafka Connect's JSON lines)."""
    truth = KafkaConnectTruth()
    for partition, records in arrivals(start, days, events_per_day, partitions, seed).items():
        by_hour: dict[datetime, list[dict]] = defaultdict(list)
        for ingested, record in records:
            by_hour[ingested.replace(minute=0, second=0, microsecond=0)].append(record)
        offset = 0
        for hour, hour_records in sorted(by_hour.items()):
            for chunk in _rotated(hour_records, flush_size):
                name = f"{hour.strftime(LAYOUT)}/{topic}+{partition}+{offset:010d}.{_ext(fmt)}"
                _write(root / name, chunk, fmt)
                truth.files.append((name, partition, offset, len(chunk)))
                for i, record in enumerate(chunk):
                    truth.add(record, partition, offset + i, start + timedelta(days=days))
                offset += len(chunk)
    return truth


def arrivals(
    start: date, days: int, events_per_day: int, partitions: int = 3, seed: int = 3
) -> dict[int, list[tuple[datetime, dict]]]:
    """Per Kafka partition, its records in offset order with their ingestion (Kafka) timestamps, up to
    the archive's end (9 hours after the last day): the topic the sink consumed."""
    rng = random.Random(seed)
    found: dict[int, list[tuple[datetime, dict]]] = defaultdict(list)
    first = datetime(start.year, start.month, start.day, tzinfo=UTC)
    for n in range(days * events_per_day):
        at = first + timedelta(seconds=rng.uniform(0, days * 86400))
        event_id = f"kc-{n:07d}"
        record = _record(event_id, at, 1 if at - first < timedelta(days=1) else 2, rng)
        partition = zlib.crc32(event_id.encode()) % partitions
        ingested = at + timedelta(seconds=rng.uniform(0, 60) if rng.random() > 0.05 else rng.uniform(0, 7200))
        found[partition].append((ingested, record))
        if rng.random() < 0.02:  # a producer retry: the same payload again, a little later
            found[partition].append((ingested + timedelta(seconds=rng.uniform(1, 300)), record))
    end = first + timedelta(days=days) + timedelta(hours=9)  # the archive ends there
    return {
        partition: [r for r in sorted(records, key=lambda r: r[0]) if r[0] < end]
        for partition, records in sorted(found.items())
    }


def _rotated(records: list[dict], flush_size: int) -> list[list[dict]]:
    """The files of an hour: a new one every `flush_size` records and on each schema change, as the
    sink rotates its files."""
    files: list[list[dict]] = []
    for record in records:
        version = record.get("schema_version", 1)
        if not files or len(files[-1]) == flush_size or files[-1][-1].get("schema_version", 1) != version:
            files.append([])
        files[-1].append(record)
    return files


def _event_day(record: dict) -> str:
    value = record["event_time"]
    if isinstance(value, int):
        return datetime.fromtimestamp(value / 1000, UTC).date().isoformat()
    return value[:10]


def _ext(fmt: str) -> str:
    return {"parquet": "snappy.parquet", "json": "json"}[fmt]


def _write(path: Path, records: list[dict], fmt: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "json":
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = sorted({k for r in records for k in r})
    pq.write_table(pa.table({n: [r.get(n) for r in records] for n in names}), path)
