"""Where a stream's replay may write: its live Kinesis stream and Kafka topic (always refused) and the
backfill streams and topics a replay may write to (allow-lists that cannot name the live one)."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

from backfill_platform.specs.common import check_name

_KINESIS_STREAM = re.compile(r"[A-Za-z0-9_.-]{1,128}")
_KAFKA_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")


def check_kinesis_stream_name(name: str) -> str:
    return check_name(name, _KINESIS_STREAM, "a Kinesis stream name (1-128 letters, digits, '_', '.', '-')")


def check_kafka_topic_name(name: str) -> str:
    check_name(name, _KAFKA_TOPIC, "a valid Kafka topic name (1-249 letters, digits, '.', '_', '-')")
    if name in (".", ".."):  # refused by Kafka too
        raise ValueError(f"{name!r} is not a valid Kafka topic name")
    return name


# A Kinesis stream name, as AWS accepts it.
KinesisStreamName = Annotated[str, AfterValidator(check_kinesis_stream_name)]
# A Kafka topic name, as the broker accepts it.
KafkaTopicName = Annotated[str, AfterValidator(check_kafka_topic_name)]


def check_replay_targets(
    live: str | None, backfill: list[str], field: str = "backfill_kinesis_streams"
) -> None:
    """A replay must never write to the live stream or topic, so its allow-list (`field`) cannot name it."""
    if live is not None and live in backfill:
        raise ValueError(
            f"{field} lists the live {'topic' if 'kafka' in field else 'stream'} {live!r}: a replay must "
            "never write to the live one"
        )
