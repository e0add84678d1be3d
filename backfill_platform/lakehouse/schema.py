"""Schema evolution of data tables: a table gains the columns its spec now declares.

Specs evolve by adding fields (a stream's new schema version, a dataset's new output column). Once the
table exists, Spark refuses to write a DataFrame with a column the table lacks ("too many data
columns"), so every write path first brings the table up to the declared schema with Iceberg's
`ALTER TABLE … ADD COLUMNS`: a metadata-only change, after which rows written before read back null
for the new column. Nothing is dropped silently, and nothing is rewritten.

A declared column whose type differs from the table's is refused with an error naming the table, the
column and both types: changing it would mean rewriting (or reinterpreting) the rows already written,
a decision for a person, not for a backfill. Columns the table has but the spec no longer declares are
left in place (their history stays readable); Spark then refuses the write ("cannot find data for the
output column"), so removing a column is a migration too, never a silent loss.

A column that is renamed (`rename_columns`, the ledger's `partition` → `partition_date`) keeps its field
id: `ALTER TABLE … RENAME COLUMN` is a metadata-only commit, the data files are read by field id, and a
partition spec or sort order on the column follows it (they name the source id, not the name).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession


class SchemaConflict(ValueError):
    """A declared column's type differs from the existing table's."""


def evolve_table(spark: SparkSession, identifier: str, columns: Sequence[tuple[str, str]]) -> list[str]:
    """Add the declared `(name, Spark SQL type)` columns that `identifier` lacks; return their names.

    Raises `SchemaConflict` if an existing column has another type than declared.
    """
    missing = _missing_columns(spark, identifier, columns)
    if missing:
        added = ", ".join(f"{name} {kind}" for name, kind in missing)
        try:
            spark.sql(f"ALTER TABLE {identifier} ADD COLUMNS ({added})")
        except AnalysisException:
            # Another run with the same spec may have added them meanwhile: fine if they are there now.
            if _missing_columns(spark, identifier, columns):
                raise
    return [name for name, _ in missing]


def _missing_columns(
    spark: SparkSession, identifier: str, columns: Sequence[tuple[str, str]]
) -> list[tuple[str, str]]:
    """Declared columns absent from the table; raises on a declared column of another type."""
    existing = {field.name: field.dataType.simpleString() for field in spark.table(identifier).schema}
    for name, kind in columns:
        if name in existing and existing[name] != kind.lower():
            raise SchemaConflict(
                f"{identifier}: column {name!r} is {existing[name]} in the table but the spec now "
                f"declares {kind.lower()}; a type change is not applied automatically (it would "
                "reinterpret the rows already written): add a new field instead, or migrate the table"
            )
    return [(name, kind) for name, kind in columns if name not in existing]


def rename_columns(spark: SparkSession, identifier: str, renamed: Mapping[str, str]) -> list[str]:
    """Rename each `old` column of `identifier` that is still there to `new`; return the old names renamed.

    Done once: a table that has `new` (renamed before, or created with it) is left alone, so calling it
    again is a no-op. Two runs may race to rename the same column: the loser's ALTER fails (the column is
    gone, or its commit is based on stale metadata) and it accepts that when the rename is there now.
    Raises `SchemaConflict` when the table has both names (a writer of the old schema added `old` back).
    """
    done = []
    for old, new in renamed.items():
        present = _column_names(spark, identifier)
        if old in present and new in present:
            raise SchemaConflict(
                f"{identifier}: has both {old!r} and {new!r}, which replaced it; a writer of the old schema "
                f"added {old!r} back after the rename: stop it, move its rows' values into {new!r}, drop {old!r}"
            )
        if old not in present:
            continue
        try:
            spark.sql(f"ALTER TABLE {identifier} RENAME COLUMN `{old}` TO `{new}`")
        except Exception:
            # The loser of a race: `Missing field` (AnalysisException) once the winner has committed, or,
            # committing on the metadata the winner replaced, Iceberg's CommitFailedException from the JVM.
            # Either way, fine if the rename is there now.
            now = _column_names(spark, identifier)
            if old in now or new not in now:
                raise
            continue
        done.append(old)
    return done


def _column_names(spark: SparkSession, identifier: str) -> set[str]:
    """The table's top-level column names, as Spark reads them now."""
    return {field.name for field in spark.table(identifier).schema}
