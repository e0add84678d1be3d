"""Spark SQL expressions of a spec, parsed and resolved without Spark.

A dataset's `expected_rows` and `reconciliation` rules are Spark SQL snippets evaluated over the events
table (`F.expr`). Spark only resolves them when a check runs, far from the spec, with an
UNRESOLVED_COLUMN naming neither. sqlglot (Spark dialect) parses them at load instead, so a typo is an
error naming the spec, the field and the column.
"""

from __future__ import annotations

from collections.abc import Iterable

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

# Nodes that make a snippet something other than one expression over the row: `a; b`, `SELECT …`,
# a sub-query, DDL/DML. `F.expr` takes none of them.
_NOT_AN_EXPRESSION = (
    exp.Block,
    exp.Query,
    exp.DDL,
    exp.DML,
    exp.Command,
    exp.Drop,
    exp.Alter,
    exp.TruncateTable,
    exp.Use,
    exp.Set,
    exp.Describe,
)


class ExpressionError(ValueError):
    """A snippet that does not parse, is not a single expression, or names unknown columns."""


def referenced_columns(sql: str) -> list[str]:
    """The column names `sql` refers to (dotted when qualified, e.g. `t.a`), in order of appearance.

    Lambda parameters (`x -> x + 1`) are not columns (sqlglot does not parse them as such).
    """
    try:
        tree = sqlglot.parse_one(sql, read="spark")
    except ParseError as exc:
        raise ExpressionError(f"does not parse as Spark SQL: {_describe(exc)}") from None
    except TokenError as exc:
        raise ExpressionError(f"does not parse as Spark SQL: {exc}") from None
    statement = next((node for node in tree.walk() if isinstance(node, _NOT_AN_EXPRESSION)), None)
    if statement is not None:
        raise ExpressionError(
            f"must be one expression over the events, not {statement.key.upper()} ({statement.sql('spark')!r})"
        )
    names = [".".join(part.name for part in column.parts) for column in tree.find_all(exp.Column)]
    return list(dict.fromkeys(names))


def unknown_columns(sql: str, known: Iterable[str]) -> list[str]:
    """The columns `sql` names that are not in `known` (compared case-insensitively, like Spark)."""
    lowered = {name.lower() for name in known}
    return [name for name in referenced_columns(sql) if name.lower() not in lowered]


def _describe(exc: ParseError) -> str:
    # sqlglot's own message underlines the position with terminal escapes; keep the words and the place.
    first = exc.errors[0] if exc.errors else {}
    if not first.get("description"):
        return str(exc).splitlines()[0]
    return f"{first['description']} (line {first.get('line')}, column {first.get('col')})"
