"""Tables in check and materialization metadata, as Dagster table values (`MetadataValue.table`).

A table value keeps every cell as a value of its own, so a value from the data (a key holding `|`) is
shown and read back as it is; the UI lays the records out, sorts and filters them.
"""

from __future__ import annotations

from collections.abc import Sequence

from dagster import MetadataValue, TableColumn, TableMetadataValue, TableRecord, TableSchema

from backfill_platform.pipeline.validation.markdown import markdown_table

Cell = str | int | float | bool | None


def metadata_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> TableMetadataValue:
    """`rows` under `header` as a Dagster table: a column per header name, typed by its values."""
    cells = [[_cell(value) for value in row] for row in rows]
    columns = [TableColumn(name, _column_type([row[i] for row in cells])) for i, name in enumerate(header)]
    records = [TableRecord(dict(zip(header, row, strict=True))) for row in cells]
    return MetadataValue.table(records=records, schema=TableSchema(columns=columns))


def table_markdown(table: TableMetadataValue) -> str:
    """A metadata table as markdown, for the CLI to print."""
    header = [column.name for column in table.schema.columns]
    return markdown_table(header, [[record.data.get(name) for name in header] for record in table.records])


def _cell(value: object) -> Cell:
    # Dates, decimals and the like: their text (a date's is ISO 8601).
    return value if value is None or isinstance(value, str | int | float | bool) else str(value)


def _column_type(values: list[Cell]) -> str:
    present = {type(value) for value in values if value is not None}
    for python, name in ((bool, "bool"), (int, "int"), (float, "float")):
        if present == {python}:
            return name
    return "float" if present == {int, float} else "string"
