"""Non-standard JSON numbers: `NaN`, `Infinity` and `-Infinity`, as Python producers write them.

Python's `json.dumps` writes a missing float as `NaN` (and an infinite one as `Infinity`) unless told
otherwise. That is not JSON: the strict parse that guards against text after a record (`json_shape.one_object`)
refuses the line, while Spark's lenient parser reads the token (as the text `"NaN"`, and `1e400` as
`"Infinity"` too, so the lenient value alone cannot tell them apart). A stream says how its producer's
tokens are read (`non_standard_numbers`: `quarantine`, `missing`, `keep`); whatever it says, a line is read
only when the tokens are its *only* defect, proven by a second strict parse of the line with each token
replaced by `null`. That copy is the "clean" line; comparing each declared field in both parses says
which fields held a token: a field Spark read from the original line but that is null in the clean one.

Cost: the regular expressions run only on lines the strict parse already refused.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

# The tokens Spark's parser (Jackson with ALLOW_NON_NUMERIC_NUMBERS) accepts; `INF` alone and `nan` it
# refuses, so they stay malformed JSON.
TOKEN = r"(?:NaN|[+-]?Infinity|[+-]INF)"
# A token where a value stands: after `:`, `[` or `,`, before `,`, `]` or `}`. Inside a string the same
# text may be replaced too; that changes only that string's text in the clean copy, never the shape of
# the line, and a declared field whose text differs between the two parses is refused (`nested_token`).
_IN_VALUE_POSITION = rf"([:\[,]\s*){TOKEN}(?=\s*[,}}\]])"
# The first `"key": TOKEN` of a line, for a detail when no declared field holds the token (keys of at most
# 200 plain characters: a bounded character class never recurses in Java's regex engine).
_KEYED_TOKEN = rf'"([^"\\]{{1,200}})"\s*:\s*({TOKEN})(?=\s*[,}}\]])'


def clean_line(line: Column, strictly_valid: Column) -> Column:
    """`line` with every token in a value position replaced by `null`; null for lines that need none
    (strictly valid, or without a token)."""
    return F.when(
        ~strictly_valid & line.rlike(_IN_VALUE_POSITION), F.regexp_replace(line, _IN_VALUE_POSITION, "$1null")
    )


def _field(parsed: Column, path: str) -> Column:
    column = parsed
    for part in path.split("."):
        column = column.getField(part)
    return column


def token_at(lenient: Column, clean: Column, path: str) -> Column:
    """Whether the field at `path` held a token: read from the line, null in its clean copy."""
    return _field(lenient, path).isNotNull() & _field(clean, path).isNull()


def token_text(lenient: Column, path: str) -> Column:
    """The token the field held, as Spark read it (`NaN`, `Infinity` or `-Infinity`)."""
    return F.regexp_replace(_field(lenient, path), '"', "")


def token_as_double(lenient: Column, path: str) -> Column:
    """The token as the double it stands for (Spark casts `NaN`, `Infinity`, `-Infinity` exactly)."""
    return token_text(lenient, path).cast("double")


def nested_token(lenient: Column, clean: Column, path: str) -> Column:
    """Whether the value at `path` differs between the two parses although neither is null: a token
    inside an array or object read as text, which neither reading can store unaltered."""
    before, after = _field(lenient, path), _field(clean, path)
    return before.isNotNull() & after.isNotNull() & (before != after)


def token_detail(lenient: Column, clean: Column, paths: list[str], line: Column, read: Column) -> Column:
    """Names the token and where it is: the first declared field holding one (`NaN in field "race"`),
    else the first key holding one in the line, else the token alone (inside an array). `read` says
    whether the clean copy was parsed (the tokens were the line's only defect); where it was not, the
    fields cannot be compared and the line itself is searched."""
    declared = [
        F.when(
            read & token_at(lenient, clean, path),
            F.format_string('%s in field "%s"', token_text(lenient, path), F.lit(path)),
        )
        for path in paths
    ]
    key, keyed = F.regexp_extract(line, _KEYED_TOKEN, 1), F.regexp_extract(line, _KEYED_TOKEN, 2)
    anywhere = F.regexp_extract(line, TOKEN, 0)
    return F.coalesce(
        *declared,
        F.when(key != "", F.format_string('%s in field "%s"', keyed, key)),
        F.format_string("%s inside an array", anywhere),
    )
