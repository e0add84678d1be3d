"""Dagster integration: the factory, the daily refresh, run workers, the instance."""
