"""Where a stream's replay may write: its live Kinesis stream and Kafka topic (always refused) and the
backfill streams and topics a replay may write to (allow-lists that cannot name the live one)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

# A Kinesis stream name, as AWS accepts it.
KinesisStreamName = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,128}$")]


def _not_dots(name: str) -> str:
    if name in (".", ".."):
        raise ValueError(f"{name!r} is not a valid Kafka topic name")
    return name


# A Kafka topic name, as the broker accepts it (`.` and `..` alone are refused by Kafka too).
KafkaTopicName = Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]{1,249}$"), AfterValidator(_not_dots)]


def check_replay_targets(
    live: str | None, backfill: list[str], field: str = "backfill_kinesis_streams"
) -> None:
    """A replay must never write to the live stream or topic, so its allow-list (`field`) cannot name it."""
    if live is not None and live in backfill:
        raise ValueError(
            f"{field} lists the live {'topic' if 'kafka' in field else 'stream'} {live!r}: a replay must "
            "never write to the live one"
        )
