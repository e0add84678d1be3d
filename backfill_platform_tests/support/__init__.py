"""What the test modules share; a test module imports from here, never from another test module.

- `session`: the session's generated archive (first day, days, events per day), range-run tags, paths.
- `lakehouse`: data directories of a test's own, reading another lakehouse through Spark, Dagster homes.
- `streams`: copies of the generated archive declared as streams of another name (their own tables).
- `datasets`: the demo dataset under a test's own name, and running its assets through Dagster.
- `specs`: spec dicts changed field by field, written as spec files.
- `cli`: the `backfill-platform` CLI in process, and reading its tables.
- `dagster_dev`: a real `dagster dev` and the GraphQL the UI speaks to it.
- `moto`: moto's S3 and Kinesis server, and the environment that points boto3 at it.
"""
