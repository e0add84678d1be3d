"""The accounting rules that turn archive lines into the exact "truth" a correct ingestion must produce.

The rules are evaluated on the raw lines exactly as they sit in the archive (not on the generator's
intentions), so the truth is what any faithful reader of the files would compute:

1. A line is *malformed* if its JSON does not parse (``malformed_json``), it has no or an empty
   ``event_id`` (``missing_event_id``), or its ``event_time`` does not parse (``unparseable_event_time``),
   checked in that order. ``event_time`` parses if it is a JSON integer (epoch milliseconds, schema v2)
   or an ISO-8601 string (schema v1, ``...Z``).
2. Otherwise the line is *admissible* iff ``hb - allowed_lateness <= t < hb + 1h + clock_skew`` where
   ``hb`` is the start of its ingestion hour (its folder) and ``t`` its event time. Earlier is
   ``too_late``; at or beyond the upper bound is ``clock_skew``.
3. A line is attributed to the UTC day of ``t`` when admissible and of ``hb`` otherwise.
4. Among the admissible copies of an ``event_id`` in one event-time day the kept one has the earliest
   ``hb``, then the earliest (file name, line number). Another copy whose raw text equals the kept
   one's is a duplicate; one with another text is quarantined as ``conflicting_duplicate`` (its payload
   is kept there), and its id is a conflicting id of that day. (The platform also deduplicates copies
   on both sides of a midnight; the generator never writes one id with two event times.)
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MS = dt.timedelta(milliseconds=1)

QUARANTINE_REASONS: tuple[str, ...] = (
    "malformed_json",
    "missing_event_id",
    "unparseable_event_time",
    "too_late",
    "clock_skew",
    "conflicting_duplicate",
)

TRUTH_FILE_NAME = "_truth.json"
_FILE_RE = re.compile(r"playback-(\d{4})-(\d{2})-(\d{2})-(\d{2})-\d{4}\.jsonl\.gz\Z")


@dataclass(frozen=True)
class ArchiveLine:
    """One line of the archive with the coordinates the accounting rules need."""

    hb_ms: int  # start of the ingestion hour (folder hour), epoch milliseconds UTC
    file_name: str
    line_no: int  # 1-based
    text: str  # raw line without the trailing newline


_DAY_NAMES: dict[int, str] = {}
_decode_json = json.JSONDecoder().decode


def ms_to_day(ms: int) -> str:
    """Return the UTC calendar day (``YYYY-MM-DD``) of an epoch-milliseconds instant."""
    day = ms // DAY_MS
    name = _DAY_NAMES.get(day)
    if name is None:
        name = _DAY_NAMES[day] = (EPOCH + dt.timedelta(days=day)).date().isoformat()
    return name


def parse_event_time(value: object) -> int | None:
    """Parse an ``event_time`` field into epoch milliseconds, or ``None`` if it is not a valid time.

    JSON integers are epoch milliseconds (schema v2); strings must be ISO-8601 (schema v1); a string
    without an offset is taken as UTC. Anything else (bools, floats, garbage strings) does not parse.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            parsed = dt.datetime.fromisoformat(value)
        except ValueError:
            return None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=dt.UTC)
        return (parsed - EPOCH) // _MS
    return None


def classify_line(text: str) -> tuple[str | None, dict | None, int | None]:
    """Apply the malformed-line rules to one raw line.

    Returns ``(reason, record, event_time_ms)``; ``reason`` is ``None`` for a well-formed line, otherwise
    one of ``malformed_json``, ``missing_event_id``, ``unparseable_event_time``.
    """
    try:
        record = _decode_json(text)
    except ValueError:
        return "malformed_json", None, None
    if not isinstance(record, dict):
        return "malformed_json", None, None
    event_id = record.get("event_id")
    if not isinstance(event_id, str) or not event_id:
        return "missing_event_id", record, None
    t = parse_event_time(record.get("event_time"))
    if t is None:
        return "unparseable_event_time", record, None
    return None, record, t


def _empty_partition() -> dict:
    return {
        "records": 0,
        "written": 0,
        "duplicates": 0,
        "conflicting_ids": 0,
        "quarantined": dict.fromkeys(QUARANTINE_REASONS, 0),
        "late": 0,
        "starts": 0,
        "starts_by_hour": {str(h): 0 for h in range(24)},
    }


def compute_partitions(
    lines: Iterable[ArchiveLine], allowed_lateness_ms: int, clock_skew_ms: int
) -> dict[str, dict]:
    """Compute the per-event-time-day accounting for the given archive lines (see module docstring)."""
    partitions: dict[str, dict] = {}

    def part(day: str) -> dict:
        p = partitions.get(day)
        if p is None:
            p = partitions[day] = _empty_partition()
        return p

    # (event_id, day) -> [sort key, t, event_type, raw text] of its admissible copies
    groups: dict[tuple[str, str], list] = {}
    for line in lines:
        hb = line.hb_ms
        reason, record, t = classify_line(line.text)
        if reason is None:
            assert t is not None and record is not None
            if t < hb - allowed_lateness_ms:
                reason = "too_late"
            elif t >= hb + HOUR_MS + clock_skew_ms:
                reason = "clock_skew"
        if reason is not None:
            p = part(ms_to_day(hb))
            p["records"] += 1
            p["quarantined"][reason] += 1
            continue
        assert record is not None and t is not None
        day = ms_to_day(t)
        part(day)["records"] += 1
        copy = ((hb, line.file_name, line.line_no), t, record.get("event_type"), line.text)
        groups.setdefault((record["event_id"], day), []).append(copy)

    for (_event_id, day), copies in groups.items():
        copies.sort(key=lambda c: c[0])
        (hb, _file, _line), t, event_type, text = copies[0]
        p = part(day)
        p["written"] += 1
        conflicting = sum(c[3] != text for c in copies[1:])
        p["duplicates"] += len(copies) - 1 - conflicting
        p["quarantined"]["conflicting_duplicate"] += conflicting
        if conflicting:
            p["conflicting_ids"] += 1
        if hb > t - t % HOUR_MS:
            p["late"] += 1
        if event_type == "start":
            p["starts"] += 1
            p["starts_by_hour"][str((t % DAY_MS) // HOUR_MS)] += 1
    return dict(sorted(partitions.items()))


def hour_from_file_name(name: str) -> int:
    """Return the ingestion hour start (epoch ms) encoded in an archive file name."""
    m = _FILE_RE.search(name)
    if m is None:
        raise ValueError(f"not a playback archive file name: {name!r}")
    y, mo, d, h = (int(g) for g in m.groups())
    return (dt.datetime(y, mo, d, h, tzinfo=dt.UTC) - EPOCH) // _MS


def iter_archive_files(root: Path) -> list[Path]:
    """List the archive's ``.jsonl.gz`` files under ``root/%Y/%m/%d/%H/`` in name order."""
    return sorted(root.glob("[0-9][0-9][0-9][0-9]/[0-9][0-9]/[0-9][0-9]/[0-9][0-9]/*.jsonl.gz"))


def read_archive(root: Path) -> Iterator[ArchiveLine]:
    """Read every line of every archive file under ``root`` (file-name order, then line order)."""
    for path in iter_archive_files(root):
        hb = hour_from_file_name(path.name)
        text = gzip.decompress(path.read_bytes()).decode("utf-8")
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        for line_no, line in enumerate(lines, start=1):
            yield ArchiveLine(hb, path.name, line_no, line)


def load_truth(root: Path) -> dict:
    """Load ``root/_truth.json`` written by :func:`generate_playback_archive`."""
    return json.loads((Path(root) / TRUTH_FILE_NAME).read_text())
