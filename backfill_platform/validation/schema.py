"""Schema checks with pandera's PySpark API, plus the failing-row counts pandera does not report."""

from __future__ import annotations

from dataclasses import dataclass

import pandera.pyspark as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

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


def validate_schema(df: DataFrame, schema: pa.DataFrameSchema) -> SchemaResult:
    validated = schema.validate(df)
    errors = []
    for depth, by_kind in (validated.pandera.errors or {}).items():
        for kind, items in by_kind.items():
            for item in items:
                errors.append(f"{depth}/{kind}: {item.get('column', '')} {item.get('error', item)}")
    required = [name for name, column in schema.columns.items() if not column.nullable]
    nulls = {}
    if required:
        row = df.agg(*(F.count(F.when(F.col(c).isNull(), 1)).alias(c) for c in required)).collect()[0]
        nulls = {c: row[c] for c in required if row[c]}
    return SchemaResult(passed=not errors and not nulls, errors=errors, null_violations=nulls)
