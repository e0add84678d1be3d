"""Does the archive hold non-standard numbers? A sample of records, read before any run.

Python producers write a missing float as `NaN` (and an infinite one as `Infinity`), which is not JSON:
a stream that does not declare how to read them (`non_standard_numbers`) has every such record
quarantined. `plan` reads a few hundred records of a few files spread over the range and says whether
such tokens occur, in which fields, and which setting would read them. Python's own parser finds the
tokens exactly (its `parse_constant` hook is called for them only, never for text inside a string).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from rich.markup import escape

from backfill_platform.pipeline.archive.listing import ArchiveFile
from backfill_platform.pipeline.archive.records import RecordFormat, iter_records
from backfill_platform.specs.stream import StreamSpec

SAMPLED_RECORDS = 2000
RECORDS_PER_FILE = 250
MAX_FILES = 64  # small files (a quiet stream's hours): more of them, still a bounded read


@dataclass
class NumberSample:
    """How many sampled records hold a non-standard number, and where (token in field -> records)."""

    records: int = 0
    holding: int = 0
    fields: Counter = field(default_factory=Counter)

    def advice(self, spec: StreamSpec) -> str | None:
        """One line for the plan when the sample found tokens, or None."""
        if not self.holding:
            return None
        # Field names come from the data: escaped, so that `[red]` in a key is not taken as markup.
        where = escape(
            ", ".join(f"{token} in {name!r} ({n})" for (token, name), n in self.fields.most_common(5))
        )
        found = (
            f"{self.holding:,} of {self.records:,} sampled records hold non-standard numbers "
            f"(Python's json.dumps writes a missing float as NaN): {where}"
        )
        if spec.non_standard_numbers == "quarantine":
            return (
                f"[yellow]{found}; with `non_standard_numbers: quarantine` (the default) they are "
                "quarantined as `non_standard_number`: declare `non_standard_numbers: missing` to read them "
                "as missing values, or `keep` to store NaN and ±Infinity in double fields"
            )
        return f"{found}; read with `non_standard_numbers: {spec.non_standard_numbers}`"


class _Token(str):
    """A non-standard number as the parser met it."""


def _paths_of_tokens(value: Any) -> list[tuple[str, str]]:
    """(token, field path) of every non-standard number in a parsed record; iterative, so that a record
    nested as deep as the parser allows is walked without recursion."""
    hits, pending = [], [(value, "")]
    while pending:
        item, path = pending.pop()
        if isinstance(item, _Token):
            hits.append((str(item), path or "(record)"))
        elif isinstance(item, dict):
            pending.extend((child, f"{path}.{key}".lstrip(".")) for key, child in item.items())
        elif isinstance(item, list):
            pending.extend((child, f"{path}[]") for child in item)
    return hits


def sample_numbers(spec: StreamSpec, files: list[ArchiveFile]) -> NumberSample:
    """Read up to RECORDS_PER_FILE records of files spread evenly over `files`, until SAMPLED_RECORDS
    records or MAX_FILES files were read."""
    sample = NumberSample()
    fmt = RecordFormat.of(spec.archive)
    for archive_file in files[:: max(1, len(files) // MAX_FILES)][:MAX_FILES]:
        if sample.records >= SAMPLED_RECORDS:
            break
        for record in islice(iter_records(archive_file.path, fmt, archive_file.reader), RECORDS_PER_FILE):
            text = record[1]
            if text is None:
                continue
            sample.records += 1
            try:
                parsed = json.loads(text, parse_constant=_Token)
            except (ValueError, RecursionError):
                # Malformed, or nested deeper than Python's parser goes: the ingestion names (quarantines)
                # it; not this sample's concern.
                continue
            hits = _paths_of_tokens(parsed)
            if hits:
                sample.holding += 1
                sample.fields.update(set(hits))
    return sample
