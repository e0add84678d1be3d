"""Run workers: which process runs a Dagster run, and what happens to its slots and locks when it dies."""
