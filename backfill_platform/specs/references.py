"""Every name a spec refers to is checked when specs load, not when a run reaches it.

A name that validates as an identifier can still name nothing: a mistyped version marker makes every
line match the wrong version or none (quarantined as `unknown_schema_version`), a mistyped column in a
dataset's SQL fails a check hours later with Spark's UNRESOLVED_COLUMN, and a mistyped transform fails
when definitions load without naming the spec. These functions return the problems of one spec as
(field path, reason) pairs; the loader turns them into a `SpecError` naming the file.

What the stream model itself declares is checked by its validators (upcast steps name fields of their
version, renames and defaults end at the latest version's fields, id/time fields are not payload). The
event id and event time field names are read from the raw records only and nothing else in a spec
declares them, so no spec-only check can tell a mistyped one from a real one.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Mapping
from dataclasses import dataclass

from backfill_platform.specs.dataset import DatasetSpec, VersionSpec
from backfill_platform.specs.expressions import (
    ExpressionError,
    UnknownColumns,
    checked_aggregate,
    checked_condition,
)
from backfill_platform.specs.stream import SchemaVersion, StreamSpec, events_columns


@dataclass(frozen=True)
class Problem:
    field: str  # path within the spec, e.g. `reconciliation[1].filter`
    reason: str

    def __str__(self) -> str:
        return f"field '{self.field}': {self.reason}"


def stream_problems(spec: StreamSpec) -> list[Problem]:
    """Version markers (`schema_versions[i].match.field`) that no record of the stream can carry."""
    problems = []
    for index, version in enumerate(spec.schema_versions):
        others = [v for v in spec.schema_versions if v is not version]
        reason = _marker_problem(spec, version, others)
        if reason:
            problems.append(Problem(f"schema_versions[{index}].match.field", reason))
    return problems


def _marker_problem(spec: StreamSpec, version: SchemaVersion, others: list[SchemaVersion]) -> str | None:
    name, number = version.match.field, version.version
    if name in (spec.event_id_field, spec.event_time.field):
        return f"{name!r} is the event id or time field; a version is recognised by another field"
    if version.match.missing and name in version.fields:
        return f"version {number} is recognised by the absence of {name!r}, a field it declares"
    if not others or name in version.fields:
        return None
    # Names the other versions declare: their payload fields and their own markers.
    known = sorted({f for v in others for f in v.fields} | {v.match.field for v in others})
    if name in known:
        return None
    if version.match.missing:  # no record carries it, so every record would match this version
        return (
            f"unknown field {name!r}: no other version has it, so every record would be version {number} "
            f"(known: {known})"
        )
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.8)
    if close:  # a marker of its own is allowed; one a letter away from another version's is a typo
        return f"unknown field {name!r}: no other version has it; did you mean {close[0]!r}? (known: {known})"
    return None


def dataset_problems(dataset: DatasetSpec, streams: Mapping[str, StreamSpec]) -> list[Problem]:
    """Every source stream exists, every SQL rule resolves against its source's events table, every
    transform loads and (with several sources) takes each source by name."""
    problems = [
        Problem(f"versions.{name}.transform", str(exc))
        for name, version in dataset.versions.items()
        if (exc := _transform_error(version, dataset))
    ]
    field = "sources" if dataset.named_sources else "source_stream"
    unknown = [name for name in dataset.stream_names if name not in streams]
    if unknown:
        known = sorted(streams) or "none"
        reasons = [f"unknown stream {name!r} (known: {known})" for name in unknown]
        return [*(Problem(field, reason) for reason in reasons), *problems]
    problems += grain_problems(dataset, streams)
    rules = [("expected_rows", dataset.expected_rows)]
    rules += [(f"reconciliation[{i}]", rule) for i, rule in enumerate(dataset.reconciliation)]
    for prefix, rule in rules:
        stream = streams[dataset.source_of(rule)]
        columns = [name for name, _ in events_columns(stream)]
        for part, check in (("expression", checked_aggregate), ("filter", checked_condition)):
            reason = _expression_problem(getattr(rule, part), columns, stream, check)
            if reason:
                problems.append(Problem(f"{prefix}.{part}", reason))
    return problems


def grain_problems(dataset: DatasetSpec, streams: Mapping[str, StreamSpec]) -> list[Problem]:
    """A dataset's partitions are its sources' or coarser: days (UTC or local) over hourly or daily streams,
    hours over hourly streams only (an hour of a daily stream could not be judged before its whole day)."""
    column = dataset.partition_column
    problems = []
    for name in dataset.stream_names:
        grain = streams[name].grain.unit
        if dataset.grain.unit == "hour" and grain == "day":
            problems.append(
                Problem(
                    f"columns.{column}",
                    f"partition_column {column!r} is a timestamp (an hourly dataset), but stream {name!r} is "
                    "partitioned by day (partition_grain: day): declare it as a date holding the event's "
                    "day, or the stream with partition_grain: hour",
                )
            )
    return problems


def _expression_problem(sql: str, columns: list[str], stream: StreamSpec, check) -> str | None:
    try:
        check(sql, columns)
    except UnknownColumns as exc:
        return f"{sql!r} {exc}; the events of stream {stream.name!r} have {columns}"
    except ExpressionError as exc:
        return f"{sql!r} {exc}"
    return None


def _transform_error(version: VersionSpec, dataset: DatasetSpec) -> ValueError | None:
    try:
        function = version.load_transform()
    except ValueError as exc:
        return exc
    if not dataset.named_sources:
        return None
    # Called as transform(**{source: events}): a parameter missing or misspelled fails here, not in a run.
    try:
        inspect.signature(function).bind(**dict.fromkeys(dataset.stream_names))
    except TypeError as exc:
        return ValueError(
            f"transform {version.transform!r} must take the sources {dataset.stream_names} as keyword "
            f"arguments: {exc}"
        )
    except ValueError:  # no signature to inspect (a builtin): it is called and fails there
        return None
    return None
