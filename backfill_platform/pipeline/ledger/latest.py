"""Which of a day's ledger rows counts: the latest, by one rule, whoever reads the ledger.

A day has one row per run that covered it (and per adoption). The latest is the row with the greatest
`LATEST_ORDER`: the most recently recorded, and on a tie of `recorded_at` (two runs recording within the
clock's resolution) the greater `run_id`. The gate and the ingestion figures (Spark, `ledger.py`),
`status`, `plan` and `backfill` (PyIceberg, `operations.ledger_view`) and the promotion report (a Spark
window, `latest_per`) all use it, so they never disagree on which validation a day stands on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

LATEST_ORDER = ("recorded_at", "run_id")


def latest_key(row: Mapping[str, Any]) -> tuple:
    """The sort key of a ledger row (a dict): the latest row of a day has the greatest."""
    return tuple(row[column] for column in LATEST_ORDER)


def latest_per(df: DataFrame, *keys: str) -> DataFrame:
    """The latest row of `df` for each value of `keys`: `latest_key` as a Spark window."""
    order = Window.partitionBy(*keys).orderBy(*(F.col(column).desc() for column in LATEST_ORDER))
    return df.withColumn("_latest", F.row_number().over(order)).where(F.col("_latest") == 1).drop("_latest")
