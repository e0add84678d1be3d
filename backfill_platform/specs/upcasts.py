"""The upcast grammar: the steps that turn a historical schema version's fields into the latest's.

A step is a mapping with one key: `rename: {from, to}`, `default: {field, value}`, `cast: {field, type}`
or `drop: name`. Each kind is a model of its own, told apart by that key (a pydantic discriminated
union); `upcast_field_types` checks a version's steps against its fields, and `pipeline/events/parse.py` applies
them to the records on Spark.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any

from pydantic import BeforeValidator, ConfigDict, Discriminator, Field, Tag

from backfill_platform.specs.common import FieldPath, FieldType, SpecModel


class RenameFields(SpecModel):
    # `from` is a Python keyword: the attribute is `from_`, the YAML key (and the dump) `from`.
    model_config = ConfigDict(serialize_by_alias=True)

    from_: FieldPath = Field(
        alias="from", description="The field as this version names it (a path if nested)."
    )
    to: FieldPath = Field(description="Its name in the latest version (a path if nested).")


class DefaultFields(SpecModel):
    field: FieldPath = Field(description="A field of the latest version that this version lacks.")
    value: str | bool | int | float | datetime | date | None = Field(
        description="Its value in every record of this version, cast to the latest version's type."
    )


class CastFields(SpecModel):
    field: FieldPath = Field(description="A field of this version.")
    type: FieldType = Field(description="Its type in the latest version.")


class Rename(SpecModel):
    rename: RenameFields = Field(description="Give a field its name in the latest version.")


class Default(SpecModel):
    default: DefaultFields = Field(description="Add a field of the latest version with a fixed value.")


class Cast(SpecModel):
    cast: CastFields = Field(description="Change a field's type (a value it cannot keep is invalid).")


class Drop(SpecModel):
    drop: FieldPath = Field(description="A field the latest version no longer has.")


# The step kinds, by their one key: a step is `{rename: {...}}`, `{default: {...}}`, `{cast: {...}}` or
# `{drop: name}`.
UPCAST_STEPS: dict[str, type[SpecModel]] = {"rename": Rename, "default": Default, "cast": Cast, "drop": Drop}


def _step_keys(value: Any) -> list[str]:
    return [key for key in UPCAST_STEPS if key in value]


def _one_step_key(value: Any) -> Any:
    if isinstance(value, dict) and len(_step_keys(value)) != 1:
        raise ValueError(
            f"an upcast step has exactly one of rename/default/cast/drop, got {_step_keys(value) or 'none'}"
        )
    return value


def _step_kind(value: Any) -> str | None:
    """The discriminator: a mapping's one step key, or the kind of an already built step."""
    if isinstance(value, dict):
        keys = _step_keys(value)
        return keys[0] if len(keys) == 1 else None
    return next((key for key, model in UPCAST_STEPS.items() if isinstance(value, model)), None)


# One step from a historical version towards the latest. pydantic puts the tag (the step's key) in an
# error's path, right before the same key: `spec_set.field_path` says it once.
UpcastStep = Annotated[
    Annotated[Rename, Tag("rename")]
    | Annotated[Default, Tag("default")]
    | Annotated[Cast, Tag("cast")]
    | Annotated[Drop, Tag("drop")],
    Discriminator(
        _step_kind,
        custom_error_type="upcast_step",
        custom_error_message="an upcast step is a mapping with one of rename/default/cast/drop",
    ),
    BeforeValidator(_one_step_key),
]


def upcast_field_types(
    version: int, fields: dict[str, str], steps: list[UpcastStep], latest_fields: dict[str, str]
) -> dict[str, str]:
    """Field name -> type of a version's `fields` after its upcast `steps` in order (validates each step).

    A defaulted field takes the latest version's type for that field.
    """
    fields = dict(fields)
    for number, step in enumerate(steps, start=1):
        # Each step names a field as it is at that step: name the step and the fields it could have named.
        where = f"version {version}, upcast step {number}"
        match step:
            case Rename(rename=rename):
                if rename.from_ not in fields:
                    raise ValueError(
                        f"{where}: rename of unknown field {rename.from_!r} (fields: {sorted(fields)})"
                    )
                fields[rename.to] = fields.pop(rename.from_)
            case Default(default=default):
                if default.field in fields:
                    raise ValueError(f"{where}: default for {default.field!r}, which it already has")
                fields[default.field] = latest_fields.get(default.field) or _type_of_default(default.value)
            case Cast(cast=cast):
                if cast.field not in fields:
                    raise ValueError(
                        f"{where}: cast of unknown field {cast.field!r} (fields: {sorted(fields)})"
                    )
                fields[cast.field] = cast.type
            case Drop(drop=name):
                if name not in fields:
                    raise ValueError(f"{where}: drop of unknown field {name!r} (fields: {sorted(fields)})")
                del fields[name]
    return fields


def _type_of_default(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "long"
    if isinstance(value, float):
        return "double"
    return "string"
