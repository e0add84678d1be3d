"""A Kafka Connect archive's window, as its live topic sees it: the offsets of the window's first and last
records per partition, from the broker's offsets-for-times.

The files' own offsets prove a window has no hole *between* its files (`kafka_connect.offset_problems`); a
file lost at the window's start or end leaves none. The topic knows where the window begins and ends: for
the ingestion times [start, end), per partition, the first offset whose timestamp is at or after `start`
and the first at or after `end`. That holds when the sink put each record in the hour of its own timestamp
(Kafka Connect's `TimeBasedPartitioner` with `timestamp.extractor=Record`: the archive's ingestion hour is
the record's Kafka timestamp), and while the topic still retains the window: a partition whose earliest
retained record is not older than `start` may have lost records of the window to retention, and gets no
edges (the files' own proof only).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

# offsets_for_times: no record at or after the time (librdkafka's OFFSET_END).
_NONE_AFTER = -1


class TopicUnreachable(RuntimeError):
    """The live topic could not be asked (broker down, unknown topic): no edges, and the check says why."""


@dataclass(frozen=True)
class WindowEdges:
    """Per partition, the offsets [first, end) the topic holds for the window; partitions beyond
    retention are listed apart (their edges cannot be known)."""

    topic: str
    offsets: dict[int, tuple[int, int]]
    beyond_retention: list[int]


class TopicWindows:
    """Asks one cluster (`config`: librdkafka settings) for windows' edges, as `window(topic, start, end)`.

    What does not depend on the window is asked once per topic: its partitions and their watermarks, or
    why the topic cannot be asked (a broker down costs its timeout once, not once per day of a range).
    """

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self._known: dict[str, tuple[dict[int, tuple[int, int]], TopicUnreachable | None]] = {}

    def __call__(self, topic: str, start: datetime, end: datetime) -> WindowEdges:
        from confluent_kafka import Consumer, KafkaException

        watermarks, failure = self._known.get(topic, ({}, None))
        if failure is not None:
            raise failure
        consumer = Consumer(
            {
                **self.config,
                "group.id": "backfill-platform.window-edges",  # never joins, never commits
                "enable.auto.commit": False,
                "log_level": 0,
            }
        )
        try:
            if not watermarks:
                watermarks = self._watermarks(consumer, topic)
                self._known[topic] = (watermarks, None)
            return _edges(consumer, topic, watermarks, start, end)
        except KafkaException as error:
            failure = TopicUnreachable(
                f"cannot ask {self.config.get('bootstrap.servers')} about topic {topic!r}: "
                f"{error.args[0].str()}"
            )
        except TopicUnreachable as error:
            failure = error
        finally:
            consumer.close()
        self._known[topic] = ({}, failure)
        raise failure

    def _watermarks(self, consumer: Any, topic: str) -> dict[int, tuple[int, int]]:
        """Per partition, its (earliest retained, end) offsets."""
        from confluent_kafka import TopicPartition

        described = consumer.list_topics(topic, timeout=10).topics.get(topic)
        if described is None or described.error is not None or not described.partitions:
            raise TopicUnreachable(f"topic {topic!r} is unknown to {self.config.get('bootstrap.servers')}")
        return {
            partition: consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
            for partition in sorted(described.partitions)
        }


def _edges(
    consumer: Any, topic: str, watermarks: dict[int, tuple[int, int]], start: datetime, end: datetime
) -> WindowEdges:
    partitions = sorted(watermarks)
    at_start = _offsets_for(consumer, topic, partitions, start)
    at_end = _offsets_for(consumer, topic, partitions, end)
    offsets, beyond = {}, []
    for partition in partitions:
        low, high = watermarks[partition]
        first = high if at_start[partition] == _NONE_AFTER else at_start[partition]
        last = high if at_end[partition] == _NONE_AFTER else at_end[partition]
        # Retained records older than `start` exist (or none was ever deleted): the window is whole.
        if low > 0 and first <= low:
            beyond.append(partition)
        else:
            offsets[partition] = (first, last)
    return WindowEdges(topic, offsets, beyond)


def _offsets_for(consumer: Any, topic: str, partitions: list[int], moment: datetime) -> dict[int, int]:
    from confluent_kafka import TopicPartition

    millis = int(moment.timestamp() * 1000)
    found = consumer.offsets_for_times([TopicPartition(topic, p, millis) for p in partitions], timeout=10)
    for answer in found:
        if answer.error is not None:
            raise TopicUnreachable(f"offsets for times of {topic!r} [{answer.partition}]: {answer.error}")
    return {answer.partition: answer.offset for answer in found}


def edge_problems(edges: WindowEdges, files: dict[int, list[tuple[str, int, int]]]) -> list[str]:
    """Offsets the topic holds for the window that no file of the window starts or ends with.

    `files`: per partition, (name, start offset, record count) of the window's files, whose contiguity
    between each other is checked elsewhere. Named as `offset_problems` names its holes:
    `partition 2: offsets 1200-1249 missing before file A (the topic's first of the window: 1200)`.
    """
    problems = []
    for partition, (first, end) in sorted(edges.offsets.items()):
        held = sorted(files.get(partition, []), key=lambda f: f[1])
        if not held:
            if end > first:
                problems.append(
                    f"partition {partition}: offsets {first}-{end - 1} of the window are in topic "
                    f"{edges.topic!r} but in no file"
                )
            continue
        first_name, first_offset, _ = held[0]
        last_name, last_start, last_records = max(held, key=lambda f: f[1] + f[2])
        if first_offset > first:
            problems.append(
                f"partition {partition}: offsets {first}-{first_offset - 1} missing before file {first_name} "
                f"(the topic's first of the window: {first})"
            )
        reached = last_start + last_records
        if reached < end:
            problems.append(
                f"partition {partition}: offsets {reached}-{end - 1} missing after file {last_name} "
                f"(the topic's last of the window: {end - 1})"
            )
    return problems
