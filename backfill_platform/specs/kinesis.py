"""Kinesis stream names a stream spec declares: its live stream and the streams a replay may write to."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

# A Kinesis stream name, as AWS accepts it.
KinesisStreamName = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,128}$")]


def check_replay_targets(live: str | None, backfill: list[str]) -> None:
    """A replay must never write to the live stream, so the allow-list of backfill streams cannot name it."""
    if live is not None and live in backfill:
        raise ValueError(
            f"backfill_kinesis_streams lists the live stream {live!r}: a replay must never write to the "
            "live stream"
        )
