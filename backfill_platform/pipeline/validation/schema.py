"""Schema checks with pandera's PySpark API, plus the failing-row counts pandera does not report."""

from __future__ import annotations

from dataclasses import dataclass

import pandera.pyspark as pa
from dagster import MetadataValue
from pandera.config import ValidationDepth, config_context
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from backfill_platform.pipeline.validation.verdicts import PartitionVerdict

# The schema check's name, for the events and for every dataset version.
SCHEMA = "schema"

_SPARK_TYPES = {
    "string": T.StringType(),
    "bigint": T.LongType(),
    "int": T.IntegerType(),
    "double": T.DoubleType(),
    "boolean": T.BooleanType(),
    "timestamp": T.TimestampType(),
    "date": T.DateType(),
}


@dataclass
class SchemaResult:
    passed: bool
    errors: list[str]
    null_violations: dict[str, int]


def pandera_schema(name: str, columns: list[tuple[str, str]], required: set[str]) -> pa.DataFrameSchema:
    """A pandera model of a table: Spark SQL types per column; `required` columns are never null."""
    return pa.DataFrameSchema(
        {col: pa.Column(_SPARK_TYPES[kind], nullable=col not in required) for col, kind in columns},
        name=name,
        strict=True,
    )


def schema_verdicts(
    table: str,
    columns: list[tuple[str, str]],
    required: set[str],
    df: DataFrame,
    days: list[str],
    null_counts: dict[str, int] | None = None,
    nulls_label: str = "null_violations",
) -> list[PartitionVerdict]:
    """The `schema` check of a stage: `df` has exactly `columns` (name, Spark SQL type) and no null in a
    `required` column. pandera validates the range's DataFrame as a whole, so every day gets the range's
    verdict; `null_counts` (required column -> null rows) may come from a pass the caller runs anyway, and
    the null rows are shown under `nulls_label`."""
    outcome = validate_schema(df, pandera_schema(table, columns, required), null_counts)
    metadata = {
        "errors": MetadataValue.json(outcome.errors),
        nulls_label: MetadataValue.json(outcome.null_violations),
        "scope": "the range validated in this run",
    }
    return [PartitionVerdict(SCHEMA, day, outcome.passed, metadata) for day in days]


def validate_schema(
    df: DataFrame, schema: pa.DataFrameSchema, null_counts: dict[str, int] | None = None
) -> SchemaResult:
    """pandera's verdict on the columns and types, plus the null rows of each required column.

    `null_counts` (required column -> rows where it is null) can come from an aggregation the caller
    already runs over `df` (see `validation.buckets.actual_figures`): then pandera only checks the
    schema (its data-level checks here are the same null checks, one Spark job each) and no job runs.
    """
    required = [name for name, column in schema.columns.items() if not column.nullable]
    if null_counts is not None and set(required) <= set(null_counts):
        # pandera checks nullability with one Spark job per column; the counts are already known.
        relaxed = schema.update_columns({name: {"nullable": True} for name in required})
        with config_context(validation_depth=ValidationDepth.SCHEMA_ONLY):
            validated = relaxed.validate(df)
    else:
        validated = schema.validate(df)
        null_counts = None
    errors = []
    for depth, by_kind in (validated.pandera.errors or {}).items():
        for kind, items in by_kind.items():
            for item in items:
                errors.append(f"{depth}/{kind}: {item.get('column', '')} {item.get('error', item)}")
    nulls = {c: null_counts[c] for c in required if null_counts[c]} if null_counts is not None else {}
    # Worded as pandera words its own nullability failure.
    errors += [f"SCHEMA/SERIES_CONTAINS_NULLS: {c} non-nullable column '{c}' contains null" for c in nulls]
    if required and null_counts is None:
        row = df.agg(*(F.count(F.when(F.col(c).isNull(), 1)).alias(c) for c in required)).collect()[0]
        nulls = {c: row[c] for c in required if row[c]}
    return SchemaResult(passed=not errors and not nulls, errors=errors, null_violations=nulls)
