"""Reading and preparing topics of the tests' Kafka broker, with confluent-kafka as any consumer would."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from backfill_platform_tests.support.processes import wait_until

# Topic creation and deletion are asynchronous in the broker: how long a topic may take to appear or go.
TOPIC_TIMEOUT_SECONDS = 30


@dataclass(frozen=True)
class Record:
    partition: int
    offset: int
    key: str
    value: dict
    headers: dict[str, str]


def create_topic(bootstrap: str, name: str, partitions: int = 1) -> None:
    """A fresh topic (an existing one of that name is deleted first), kept forever: a backfill topic."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    if name in admin.list_topics(timeout=10).topics:
        admin.delete_topics([name])[name].result(30)
        wait_until(
            lambda: name not in admin.list_topics(timeout=10).topics,
            timeout=TOPIC_TIMEOUT_SECONDS,
            every=0.1,
            what=f"{name} deleted",
        )
    config = {"retention.ms": "-1"}
    admin.create_topics([NewTopic(name, partitions, 1, config=config)])[name].result(30)
    wait_until(
        lambda: len(admin.list_topics(name, timeout=10).topics[name].partitions) == partitions,
        timeout=TOPIC_TIMEOUT_SECONDS,
        every=0.1,
        what=f"{name} created with {partitions} partitions",
    )


def read_topic(bootstrap: str, topic: str, committed: bool = True, timeout: float = 60) -> list[Record]:
    """Every record of every partition, from the beginning to the end as the isolation level sees it
    (`read_committed`: the last stable offset; commit markers are no records)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    partitions = admin.list_topics(topic, timeout=10).topics[topic].partitions
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"test-reader-{uuid.uuid4().hex}",
            "isolation.level": "read_committed" if committed else "read_uncommitted",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    records: list[Record] = []
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        open_partitions = set(partitions)

        def read_to_the_end() -> bool:
            """Read one message (or an end of partition); whether every partition is now read to its end."""
            message = consumer.poll(0.5)
            if message is None:
                return not open_partitions
            if message.error():
                if message.error().code() == KafkaError._PARTITION_EOF:
                    open_partitions.discard(message.partition())
                    return not open_partitions
                raise RuntimeError(message.error().str())
            headers = {k: v.decode() for k, v in message.headers() or []}
            records.append(
                Record(
                    message.partition(),
                    message.offset(),
                    message.key().decode(),
                    json.loads(message.value()),
                    headers,
                )
            )
            return False

        # The consumer's poll waits for a message itself: no pause between reads.
        wait_until(
            read_to_the_end,
            timeout=timeout,
            every=0,
            what=lambda: (
                f"every partition of {topic} read to its end (still open: {sorted(open_partitions)})"
            ),
        )
    finally:
        consumer.close()
    return records
