"""Online replay: republish the validated events of a time range to a separate Kinesis stream.

`source` reads the events table (deduplicated, upcast) through PyIceberg in a deterministic order,
`kinesis` writes within the stream's limits (batching, throttling, retries, circuit breaker),
`checkpoint` records what was acknowledged, `runner` ties them together, `job` is the Dagster job.
"""
