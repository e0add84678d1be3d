"""Pieces shared by stream and dataset specs: safe identifiers and the spec base model."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, PrivateAttr


def check_name(value: object, pattern: re.Pattern[str], what: str, field: str | None = None) -> str:
    """The one check of every name (identifiers, field paths, columns, tables, catalogs, topics, streams,
    transforms): the *whole* value must match `pattern` (`fullmatch`; an anchored `re.match(r"^…$")`
    would pass a name ending in a newline, since `$` matches before a final newline). A spec's fields are
    named by pydantic's error; a name from elsewhere (a command's option) passes its `field`."""
    if not isinstance(value, str) or pattern.fullmatch(value) is None:
        raise ValueError(f"{f'{field}: ' if field else ''}{value!r} is not {what}")
    return value


_IDENTIFIER = re.compile(r"[a-z][a-z0-9_]{0,62}")


def check_identifier(value: str, field: str | None = None) -> str:
    """Names reach SQL and table identifiers, so only lower-case snake_case identifiers are accepted."""
    return check_name(
        value,
        _IDENTIFIER,
        "a safe identifier (lower-case letters, digits and '_', starting with a letter)",
        field,
    )


Identifier = Annotated[str, AfterValidator(check_identifier)]

_FIELD_PATH = re.compile(r"[a-z][a-z0-9_]{0,62}(\.[a-z][a-z0-9_]{0,62}){0,7}")


def check_field_path(value: str) -> str:
    """A raw field: an identifier, or a dotted path into nested objects (`context.device.type`)."""
    return check_name(
        value,
        _FIELD_PATH,
        "a safe identifier (lower-case letters, digits and '_', starting with a letter), nor such "
        "identifiers joined by '.' (a nested field: `context.device.type`)",
    )


# A field of the raw records; nested fields are dotted paths (`context.device.type`).
FieldPath = Annotated[str, AfterValidator(check_field_path)]


def column_name(path: str) -> str:
    """The events table's column of a raw field: a nested path flattened with `_`
    (`context.device.type` -> `context_device_type`); a top-level field keeps its name."""
    return path.replace(".", "_")


_CATALOG = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


def check_catalog_name(value: str, source: str = "BACKFILL_PLATFORM_CATALOG_NAME") -> str:
    """A catalog name is spliced into every table identifier and Spark setting: no quote, dot or space."""
    try:
        return check_name(
            value, _CATALOG, "a safe identifier (letters, digits and '_', not starting with a digit)"
        )
    except ValueError as exc:
        raise ValueError(f"catalog name (from {source}): {exc}") from None


# Spark SQL type names a spec may use for payload fields.
FIELD_TYPES = {
    "string": "string",
    "long": "bigint",
    "int": "int",
    "double": "double",
    "boolean": "boolean",
    "timestamp": "timestamp",
    "date": "date",
}


def check_field_type(value: str) -> str:
    if value not in FIELD_TYPES:
        raise ValueError(f"{value!r} is not a field type; use one of {sorted(FIELD_TYPES)}")
    return value


FieldType = Annotated[str, AfterValidator(check_field_type)]


class SpecModel(BaseModel):
    """Strict base: unknown keys are errors, so a typo in a spec never passes silently."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    # The YAML file the spec was read from (set by the loader; None when built in code). Errors name it,
    # and a transform `module:function` or `file.py:function` resolves beside it.
    _source_path: Path | None = PrivateAttr(default=None)
