"""Kafka Connect's S3 sink: file names that carry Kafka offsets, and the completeness they prove.

The sink names each file `<topic>+<partition>+<startOffset>.<ext>` (the offset zero-padded to 10 digits
by default) and writes into it the records of one Kafka partition from that offset on, contiguously. So,
per partition, a file's start offset plus its record count is the next file's start offset: a file that
never arrived leaves a hole in the offsets, whatever the hours it would have been ingested in. That is
what an hourly listing cannot tell of a quiet stream (an empty hour looks like a lost one).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

# Kafka topic names are letters, digits, `.`, `_` and `-`: a `+` can only be the sink's separator.
_FILE_NAME = re.compile(r"(?P<topic>[A-Za-z0-9._-]+)\+(?P<partition>\d+)\+(?P<offset>\d+)(\.[^/\n]*)?")


@dataclass(frozen=True)
class KafkaFile:
    """Where a Kafka Connect file's records come from: their topic, partition and first offset."""

    name: str  # relative to the archive root
    topic: str
    partition: int
    start_offset: int


def kafka_file(name: str) -> KafkaFile | None:
    """The topic, partition and start offset a file name carries, or None if it is not the sink's."""
    match = _FILE_NAME.fullmatch(PurePosixPath(name).name)
    if match is None:
        return None
    return KafkaFile(name, match["topic"], int(match["partition"]), int(match["offset"]))


def offset_problems(names: Iterable[str], records: dict[str, int], topic: str | None = None) -> list[str]:
    """Why the files `names` (with their record counts) do not hold contiguous offsets, per partition.

    Each problem names the partition, the missing offsets and the files on either side:
    `partition 3: offsets 1200-1249 missing between files A and B`. A file whose name is not the sink's,
    or of another topic than `topic`, or whose records were not counted, is a problem too: its offsets
    cannot be accounted for. Overlapping files (a rewrite after a rebalance) are not: the ids they
    repeat are duplicates, removed as any other.
    """
    problems: list[str] = []
    by_partition: dict[int, list[KafkaFile]] = {}
    for name in sorted(names):
        parsed = kafka_file(name)
        if parsed is None:
            problems.append(f"file {name}: not named <topic>+<partition>+<startOffset>.<ext>")
        elif topic is not None and parsed.topic != topic:
            problems.append(f"file {name}: topic {parsed.topic!r}, not {topic!r}")
        elif name not in records:
            problems.append(f"file {name}: its records were not counted")
        else:
            by_partition.setdefault(parsed.partition, []).append(parsed)
    for partition, files in sorted(by_partition.items()):
        files.sort(key=lambda f: f.start_offset)
        reached, last = files[0].start_offset, files[0]  # offsets before `reached` are accounted for
        for file in files:
            if file.start_offset > reached:
                problems.append(
                    f"partition {partition}: offsets {reached}-{file.start_offset - 1} missing between "
                    f"files {last.name} and {file.name}"
                )
            if file.start_offset + records[file.name] >= reached:
                reached, last = file.start_offset + records[file.name], file
    return problems
