"""Tables as the CLI and the run log show them (`pipeline/validation/markdown.py`, and
`metadata_tables.py`): a markdown row per data row, where a `|`, a backslash or a line break inside a
value (a key from the data) cannot split a row or a cell; and check metadata as Dagster tables, a column
per header name typed by its values, shown as markdown again."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from backfill_platform.pipeline.validation.markdown import markdown_table
from backfill_platform.pipeline.validation.metadata_tables import metadata_table, table_markdown


def test_a_table_is_a_header_a_rule_and_a_line_per_row() -> None:
    assert markdown_table(["day", "rows"], [["2026-10-01", 3], ["2026-10-02", None]]) == (
        "| day | rows |\n|---|---|\n| 2026-10-01 | 3 |\n| 2026-10-02 |  |"
    )
    assert markdown_table(["day"], []) == "| day |\n|---|"


def test_a_value_cannot_split_its_row_or_its_cell() -> None:
    text = markdown_table(["key"], [["a|b"], ["line\nbreak"], ["cr\r\nlf"], ["back\\slash|"]])
    lines = text.split("\n")
    assert len(lines) == 6
    assert lines[2:] == ["| a\\|b |", "| line break |", "| cr  lf |", "| back\\\\slash\\| |"]
    # The header is escaped as the values are.
    assert markdown_table(["a|b"], []) == "| a\\|b |\n|---|"


def test_an_escaped_pipe_is_not_confused_with_a_backslash_before_a_real_one() -> None:
    # `a\` then a cell separator must not read as an escaped pipe: the backslash itself is escaped.
    assert markdown_table(["x", "y"], [["a\\", "b"]]) == "| x | y |\n|---|---|\n| a\\\\ | b |"


def test_a_metadata_table_types_each_column_by_its_values() -> None:
    table = metadata_table(
        ["day", "rows", "ratio", "mixed", "ok", "empty"],
        [
            [date(2026, 10, 1), 3, 0.5, 1, True, None],
            [date(2026, 10, 2), None, 1, 0.25, False, None],
        ],
    )
    types = {column.name: column.type for column in table.schema.columns}
    assert types == {
        "day": "string",
        "rows": "int",
        "ratio": "float",
        "mixed": "float",
        "ok": "bool",
        "empty": "string",
    }
    # A date, a decimal and the like are kept as their text.
    assert table.records[0].data["day"] == "2026-10-01"
    assert metadata_table(["n"], [[Decimal("12345678901234567890")]]).records[0].data == {
        "n": "12345678901234567890"
    }


def test_a_bool_with_ints_is_not_an_int_column() -> None:
    table = metadata_table(["flag"], [[True], [1]])
    assert [column.type for column in table.schema.columns] == ["string"]


def test_a_metadata_table_shows_as_the_markdown_of_its_rows() -> None:
    header, rows = ["day", "key", "rows"], [["2026-10-01", "a|b", 3], ["2026-10-02", None, 0]]
    assert table_markdown(metadata_table(header, rows)) == markdown_table(header, rows)
