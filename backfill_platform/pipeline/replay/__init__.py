"""Online replay: republish the validated events of a time range to a separate Kinesis stream or Kafka topic.

`source` reads the events table (deduplicated, upcast) through PyIceberg in a deterministic order,
`delivery` is what every sink shares (pacing, the circuit breaker), `kinesis` writes within the stream's
limits and `checkpoint` records what was acknowledged, `kafka` commits each batch with its position in one
transaction (`kafka_progress`), `erasure` leaves requested subjects out, `runner` ties them together, `job` is the Dagster job.
"""
