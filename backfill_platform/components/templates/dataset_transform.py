"""Transform of the dataset beside it: a pure function of the events of a window (see
docs/validation-and-promotion.md, "Writing a transform"). Input: the events table's rows of the
window's days. Output: exactly the dataset's declared columns, one row per key, only for those days."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def per_hour(events: DataFrame) -> DataFrame:
    return events.groupBy(
        F.to_date("event_time").alias("event_date"),
        F.hour("event_time").alias("event_hour"),
        "action",
    ).agg(F.count(F.lit(1)).alias("events"), F.sum("amount").alias("amount"))
