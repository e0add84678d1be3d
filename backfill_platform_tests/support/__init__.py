"""What the test modules share; a test module imports from here, never from another test module.

- `session`: the session's generated archive (first day, days, events per day), range-run tags, paths.
- `lakehouse`: data directories of a test's own, reading another lakehouse through Spark, Dagster homes.
- `streams`: copies of the generated archive declared as streams of another name (their own tables).
- `datasets`: the demo dataset under a test's own name, running its assets through Dagster, and what a
  dataset's production is named (`production`: asset key, GraphQL path, table).
- `specs`: spec dicts changed field by field, written as spec files.
- `cli`: the `backfill-platform` CLI in process, and reading its tables.
- `dagster_dev`: a real `dagster dev` and the GraphQL the UI speaks to it (backfills, checks, a sensor, runs).
- `daily_refresh`: live streams in a team's project, late files, and watching the daemon refresh them.
- `automation`: the automation conditions evaluated tick by tick, runs simulated by reported events.
- `moto`: moto's S3 and Kinesis server, and the environment that points boto3 (driver and executors) at it.
- `processes`: a free port, a process stopped, and `wait_until`, the one poll with a deadline.
"""
