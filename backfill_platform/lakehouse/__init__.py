"""Spark + Iceberg lakehouse: jars, the Spark resource, catalog preflight and refusals, and table helpers (the
settings it reads are `backfill_platform/settings.py`)."""
