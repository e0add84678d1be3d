"""The Kafka cluster the platform talks to: a replay's backfill topic, a Kafka Connect archive's live topic.

One `ConfigurableResource` (confluent-kafka's librdkafka settings): the bootstrap servers from
`BACKFILL_PLATFORM_KAFKA_BOOTSTRAP` when the run starts unless set, SASL credentials through `EnvVar`.
"""

from __future__ import annotations

from typing import Any

from dagster import ConfigurableResource
from pydantic import Field

from backfill_platform import settings

DEFAULT_PROGRESS_TOPIC = "backfill-platform-replay-progress"


class KafkaResource(ConfigurableResource):
    """Connection to a Kafka cluster for a replay (confluent-kafka, librdkafka). Secrets through `EnvVar`."""

    bootstrap_servers: str = Field(
        default="",
        description=f"host:port[,host:port] [{settings.KAFKA_BOOTSTRAP_ENV} when the run starts, else 127.0.0.1:9092].",
    )
    security_protocol: str = Field(
        default="PLAINTEXT", description="PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL."
    )
    sasl_mechanism: str | None = Field(default=None, description="e.g. PLAIN, SCRAM-SHA-512.")
    sasl_username: str | None = Field(default=None, description="SASL user (an EnvVar).")
    sasl_password: str | None = Field(default=None, description="SASL password (an EnvVar).")
    progress_topic: str = Field(
        default=DEFAULT_PROGRESS_TOPIC,
        description=(
            "Compacted topic holding each replay's position, written in the same transaction as its records; "
            "created (1 partition, cleanup.policy=compact) if missing."
        ),
    )
    transaction_timeout_ms: int = Field(
        default=60_000,
        ge=1000,
        description="The broker aborts a transaction left open this long (a replay killed mid-batch).",
    )
    message_timeout_ms: int = Field(
        default=30_000,
        ge=1000,
        description="How long a record may wait for the broker before its batch fails (≤ the transaction timeout).",
    )

    def bootstrap(self) -> str:
        return self.bootstrap_servers or settings.env_or(settings.KAFKA_BOOTSTRAP_ENV, "127.0.0.1:9092")

    def client_config(self) -> dict[str, Any]:
        """librdkafka settings shared by the producer, the admin client and the progress reader."""
        config: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap(),
            "security.protocol": self.security_protocol,
        }
        if self.sasl_mechanism:
            config["sasl.mechanism"] = self.sasl_mechanism
        if self.sasl_username:
            config["sasl.username"] = self.sasl_username
        if self.sasl_password:
            config["sasl.password"] = self.sasl_password
        return config
