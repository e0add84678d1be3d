"""Where a Kafka replay stands: its position in the shared, compacted progress topic.

Each replay's position is a record keyed by its identity (stream, range, topic), written in the same
transaction as the batch it follows (`kafka.py`). The topic is created on first use (one partition,
`cleanup.policy=compact`), as Kafka Connect creates its offsets topic; compaction keeps each replay's
last position.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from backfill_platform import settings
from backfill_platform.pipeline.kafka_cluster import KafkaResource
from backfill_platform.pipeline.replay.checkpoint import Checkpoint
from backfill_platform.pipeline.replay.delivery import ReplayError


def cluster_metadata(kafka: KafkaResource, topic: str | None = None) -> Any:
    """The cluster's metadata (of one topic, or of all): a clear error when no broker answers."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({**kafka.client_config(), "log_level": 0})
    try:
        return admin.list_topics(topic=topic, timeout=10)
    except KafkaException as error:
        raise ReplayError(
            f"cannot reach Kafka at {kafka.bootstrap()} ({settings.KAFKA_BOOTSTRAP_ENV}): {error.args[0].str()}"
        ) from None


def ensure_progress_topic(kafka: KafkaResource) -> None:
    """Create the progress topic (compacted, one partition) unless it exists."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    name = kafka.progress_topic
    metadata = cluster_metadata(kafka)
    if name in metadata.topics:
        return
    admin = AdminClient({**kafka.client_config(), "log_level": 0})
    replicas = min(3, len(metadata.brokers))
    wanted = NewTopic(name, 1, replicas, config={"cleanup.policy": "compact"})
    try:
        admin.create_topics([wanted])[name].result(30)
    except KafkaException as error:
        if error.args[0].name() != "TOPIC_ALREADY_EXISTS":  # another replay created it meanwhile
            raise ReplayError(f"cannot create the progress topic {name!r}: {error.args[0].str()}") from None


def reader_config(kafka: KafkaResource) -> dict[str, Any]:
    """A `read_committed` consumer that only assigns partitions (never joins its group, never commits)."""
    return {
        **kafka.client_config(),
        "group.id": f"backfill-platform.replay-reader.{uuid.uuid4().hex}",
        "isolation.level": "read_committed",
        "enable.auto.commit": False,
        "enable.partition.eof": True,
        "log_level": 0,
    }


def read_position(kafka: KafkaResource, key: bytes) -> Checkpoint | None:
    """The last committed position recorded under `key` (None: none yet).

    Read `read_committed` up to the topic's end as it is now, uncommitted records included: other
    replays share the topic, and one of them may have a transaction open (a batch: usually under a
    second; one killed mid-batch: until the broker's transaction timeout). A committed reader stops at
    the first open transaction, and a position of ours committed after it would be missed: so the read
    waits until everything before the end has been committed or aborted.
    """
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    partition = TopicPartition(kafka.progress_topic, 0)
    peek = Consumer({**reader_config(kafka), "isolation.level": "read_uncommitted"})
    try:
        end = peek.get_watermark_offsets(partition, timeout=10)[1]
    finally:
        peek.close()
    if end == 0:
        return None  # nothing was ever written to it
    consumer = Consumer(reader_config(kafka))
    found: bytes | None = None
    deadline = time.monotonic() + 2 * kafka.transaction_timeout_ms / 1000 + 10
    try:
        consumer.assign([TopicPartition(kafka.progress_topic, 0, OFFSET_BEGINNING)])
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                if message.error().code() != KafkaError._PARTITION_EOF:
                    raise ReplayError(f"cannot read the progress topic: {message.error().str()}")
                # The end the committed reader reached: the EOF's offset (its position is unset when it
                # read nothing).
                if max(message.offset(), consumer.position([partition])[0].offset) >= end:
                    break
                continue
            if message.key() == key:
                found = message.value()
            if message.offset() + 1 >= end:
                break
        else:
            raise ReplayError(
                f"the progress topic {kafka.progress_topic!r} has a transaction open for longer than the "
                "transaction timeout: cannot tell this replay's position yet"
            )
    finally:
        consumer.close()
    return Checkpoint(**json.loads(found)) if found else None
