"""Spark SQL expressions of a spec: data checked against a grammar, never code handed to Spark.

A dataset's `expected_rows` and `reconciliation` rules are Spark SQL snippets evaluated over the events
table (`F.expr`). A spec author may write a condition or an aggregate over the source's columns, nothing
else: a snippet that read another table (a subquery), called into the JVM (`reflect`, `java_method`) or
pulled a secret in (`${env:…}`, Spark's variable substitution) would turn a spec into code running with
the platform's credentials. So each snippet is parsed with sqlglot (Spark dialect) and every node of the
tree must be on an allow-list: literals, operators, `CASE`, casts, the columns of the source's events and
the functions of `ALLOWED_FUNCTIONS` (deterministic, no JVM reflection, no regular expressions: a
pathological pattern could hang a check). Text sqlglot and Spark might read differently is refused before
parsing (comments, `${`, backslashes, `;`, control characters), and Spark is only ever handed the
expression *re-rendered from the checked tree* (`checked_condition` / `checked_aggregate`), so what runs is
exactly what was checked. The same check runs when specs load (naming the file and field) and again when
a check builds its query (a spec built in code or changed after load gets no way around it).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

# A rule is one short expression; a bound keeps the parser's recursion (and the message) small.
MAX_SQL_CHARS = 2000
MAX_SQL_NODES = 400
# Text refused before parsing: each is a place where two SQL lexers can disagree (a backslash-newline
# continuing a `--` comment for one of them, an escaped quote) or where Spark rewrites the text itself.
_FORBIDDEN_TEXT = {
    "--": "a comment",
    "/*": "a comment",
    "*/": "a comment",
    "${": "a variable substitution",
    "\\": "a backslash",
    ";": "a statement separator",
}
# Spark functions a rule may call (upper case, as sqlglot renders them for Spark). Aggregates, then
# conditionals and casts, strings, numbers, dates. Not: anything non-deterministic (a check must be
# reproducible), reflection/UDFs, regular expressions, generators, higher-order functions.
AGGREGATES = {
    "COUNT", "SUM", "MIN", "MAX", "AVG", "COUNT_IF", "APPROX_COUNT_DISTINCT", "BOOL_AND", "BOOL_OR",
    "MAX_BY", "MIN_BY",
}  # fmt: skip
ALLOWED_FUNCTIONS = AGGREGATES | {
    "CAST", "TRY_CAST", "COALESCE", "NVL", "IFNULL", "NULLIF", "IF", "ISNULL", "ISNOTNULL",
    "LOWER", "UPPER", "LCASE", "UCASE", "LENGTH", "CHAR_LENGTH", "SUBSTRING", "SUBSTR", "TRIM", "LTRIM",
    "RTRIM", "CONCAT", "CONCAT_WS", "STARTSWITH", "ENDSWITH", "CONTAINS",
    "ABS", "ROUND", "FLOOR", "CEIL", "CEILING", "GREATEST", "LEAST", "HASH", "XXHASH64",
    "TO_DATE", "DATE", "TO_TIMESTAMP", "HOUR", "MINUTE", "DAY", "DAYOFMONTH", "DAYOFWEEK", "MONTH",
    "YEAR", "DATE_TRUNC", "TRUNC", "DATEDIFF", "DATE_ADD", "DATE_SUB",
}  # fmt: skip
_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")
# A `LIKE`/`ILIKE` pattern is a regular expression to Spark (`%` is `.*`, `_` is `.`, matched by Java's
# backtracking engine), so it is bounded as the regexes it is: a string literal of at most
# MAX_LIKE_PATTERN_CHARS with at most one `%` before its trailing ones. Then a match costs at most the
# value's length times the pattern's; each further `%` before the end multiplies it by the value's length
# (`'%a%a…%b'` over 40-character values ran for minutes). Every shape Spark rewrites into plain string
# functions (`abc%`, `%abc`, `%abc%`, `ab%cd`) is within the bound.
MAX_LIKE_PATTERN_CHARS = 200
MAX_LIKE_INNER_WILDCARDS = 1
# Tree nodes that are not function calls and are harmless over one row of the events.
_STRUCTURE = (
    exp.Column, exp.Identifier, exp.Literal, exp.Boolean, exp.Null, exp.Paren, exp.Tuple,
    exp.Not, exp.And, exp.Or, exp.EQ, exp.NEQ, exp.NullSafeEQ, exp.GT, exp.GTE, exp.LT, exp.LTE,
    exp.Is, exp.In, exp.Between, exp.Like, exp.ILike, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod,
    exp.IntDiv, exp.Neg, exp.Case, exp.If, exp.DataType, exp.Distinct,
)  # fmt: skip


class ExpressionError(ValueError):
    """A snippet that does not parse, is not a single allowed expression, or names unknown columns."""


def checked_condition(sql: str, columns: Iterable[str]) -> str:
    """`sql` as Spark will get it: a row condition over `columns` only, re-rendered from the checked tree."""
    tree = _checked_tree(sql, columns)
    if tree.find(exp.AggFunc):
        raise ExpressionError("is a condition on each event and may not aggregate")
    return _render(tree)


def checked_aggregate(sql: str, columns: Iterable[str]) -> str:
    """`sql` as Spark will get it: an aggregate over `columns` only, re-rendered from the checked tree."""
    tree = _checked_tree(sql, columns)
    if not tree.find(exp.AggFunc):
        raise ExpressionError(f"must aggregate the events of a bucket (one of {sorted(AGGREGATES)})")
    return _render(tree)


def parse_checked(sql: str) -> exp.Expression:
    """The tree of an already checked (re-rendered) snippet, to compose into a larger expression."""
    return sqlglot.parse_one(sql, read="spark")


def _checked_tree(sql: str, columns: Iterable[str]) -> exp.Expression:
    if not isinstance(sql, str) or not sql.strip():
        raise ExpressionError("is empty")
    if len(sql) > MAX_SQL_CHARS:
        raise ExpressionError(f"is {len(sql):,} characters, more than a rule may be ({MAX_SQL_CHARS:,})")
    for text, what in _FORBIDDEN_TEXT.items():
        if text in sql:
            raise ExpressionError(f"contains {what} ({text!r}), which a rule may not")
    control = next(
        (c for c in sql if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") and c not in "\t\n\r"), None
    )
    if control is not None:
        raise ExpressionError(f"contains the control character {control!r}")
    try:
        tree = sqlglot.parse_one(sql, read="spark")
    except ParseError as exc:
        raise ExpressionError(f"does not parse as Spark SQL: {_describe(exc)}") from None
    except (TokenError, RecursionError) as exc:
        raise ExpressionError(f"does not parse as Spark SQL: {type(exc).__name__}: {exc}") from None
    except Exception as exc:  # sqlglot's parser fails on some malformed input with an IndexError & co
        raise ExpressionError(f"does not parse as Spark SQL ({type(exc).__name__})") from None
    known = {name.lower() for name in columns}
    nodes = list(tree.walk())
    if len(nodes) > MAX_SQL_NODES:
        raise ExpressionError(f"has more than {MAX_SQL_NODES} parts; a rule is one short expression")
    unknown = []
    for node in nodes:
        problem = _node_problem(node, known)
        if problem == "unknown column":
            unknown.append(node.name)
        elif problem:
            raise ExpressionError(problem)
    if unknown:
        names = list(dict.fromkeys(unknown))
        raise UnknownColumns(names)
    return tree


class UnknownColumns(ExpressionError):
    """Names columns the events do not have (the caller says which the events do have)."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        plural = "s" if len(names) > 1 else ""
        super().__init__(f"names unknown column{plural} {', '.join(map(repr, names))}")


def _node_problem(node: exp.Expression, known: set[str]) -> str | None:
    if isinstance(node, exp.Column):
        if node.table or node.args.get("db") or node.args.get("catalog"):
            return f"must name columns of the events only, not {node.sql('spark')!r} (a table or struct)"
        return None if node.name.lower() in known else "unknown column"
    if isinstance(node, exp.Star):
        return None if isinstance(node.parent, exp.Count) else "may not use '*' but in count(*)"
    if isinstance(node, exp.Literal) and node.is_string and any(c in node.this for c in "'\"\\"):
        return f"string literal {node.this!r} may not hold quotes or backslashes"
    if isinstance(node, exp.Like | exp.ILike):
        return _pattern_problem(node)
    # A date unit (`date_trunc('DAY', …)`) is a bare word in the tree.
    if isinstance(node, _STRUCTURE) or (isinstance(node, exp.Var) and node.arg_key == "unit"):
        return None  # sqlglot's AND/OR/CASE are `Func`s too: structure is judged first
    if isinstance(node, exp.Func):
        name = node.name if isinstance(node, exp.Anonymous) else node.sql("spark").split("(", 1)[0]
        name = name.strip().upper()
        if not _NAME.fullmatch(name):  # an operator-like function (`a RLIKE b`): sqlglot's name for it
            name = node.key.upper()
        if name in ALLOWED_FUNCTIONS:
            return None
        allowed = ", ".join(sorted(n.lower() for n in ALLOWED_FUNCTIONS))
        return f"calls {name.lower()!r}, which is not an allowed function (allowed: {allowed})"
    if isinstance(node, exp.Query | exp.Subquery | exp.Table | exp.Block):
        return f"must be one expression over the events, not {node.key.upper()} ({node.sql('spark')!r})"
    return f"may not contain {node.key.upper()} ({node.sql('spark')!r}); a rule is one expression over the events"


def _pattern_problem(node: exp.Like | exp.ILike) -> str | None:
    """Why a `LIKE`/`ILIKE` pattern could keep Spark's regex engine busy (see MAX_LIKE_INNER_WILDCARDS)."""
    operator = "ILIKE" if isinstance(node, exp.ILike) else "LIKE"
    pattern = node.expression
    if not (isinstance(pattern, exp.Literal) and pattern.is_string):
        return f"{operator}'s pattern must be a string literal, not {pattern.sql('spark')!r}"
    text = pattern.this
    if len(text) > MAX_LIKE_PATTERN_CHARS:
        return (
            f"{operator} pattern of {len(text):,} characters is longer than a pattern may be "
            f"({MAX_LIKE_PATTERN_CHARS})"
        )
    inner = text.rstrip("%").count("%")
    if inner > MAX_LIKE_INNER_WILDCARDS:
        return (
            f"{operator} pattern {text!r} has {inner} '%' wildcards before its end: Spark matches a {operator} "
            "pattern with a backtracking regular expression, which such a pattern can keep busy for minutes; "
            f"use at most {MAX_LIKE_INNER_WILDCARDS} (e.g. 'abc%', '%abc', '%abc%', 'ab%cd'), or split the "
            "condition (`a LIKE '%x%' AND a LIKE '%y%'`, `contains(a, 'x')`)"
        )
    return None


def _render(tree: exp.Expression) -> str:
    # The text Spark gets must be sqlglot's fixed point: read again, it renders to itself (so no part of
    # it is read differently the second time; `DATE'…'` becomes `CAST('…' AS DATE)` the first time).
    try:
        rendered = tree.sql("spark", comments=False)
        again = sqlglot.parse_one(rendered, read="spark").sql("spark", comments=False)
    except Exception as exc:
        raise ExpressionError(f"cannot be rendered back for Spark ({type(exc).__name__})") from None
    if again != rendered:
        raise ExpressionError(f"does not render back to itself ({rendered!r})")
    return rendered


def referenced_columns(sql: str) -> list[str]:
    """The column names `sql` refers to, in order of appearance (no checks beyond parsing)."""
    tree = sqlglot.parse_one(sql, read="spark")
    names = [".".join(part.name for part in column.parts) for column in tree.find_all(exp.Column)]
    return list(dict.fromkeys(names))


def _describe(exc: ParseError) -> str:
    # sqlglot's own message underlines the position with terminal escapes; keep the words and the place.
    first = exc.errors[0] if exc.errors else {}
    if not first.get("description"):
        return str(exc).splitlines()[0]
    return f"{first['description']} (line {first.get('line')}, column {first.get('col')})"
