"""Markdown tables for what the CLI prints and the run log shows (check metadata uses Dagster tables:
`pipeline/validation/metadata_tables.py`)."""

from __future__ import annotations


def markdown_table(header: list[str], rows: list[list[object]]) -> str:
    """A markdown table; a `|` or a line break inside a value (a key from the data) cannot split a row."""
    lines = ["| " + " | ".join(map(_cell, header)) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _cell(value: object) -> str:
    text = "" if value is None else str(value)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")
