"""A deterministic bad-input corpus: an archive in the playback stream's layout with a known count of
each defect a real archive shows, and the outcome every line must have.

``write_corpus(root)`` writes it (no randomness, gzip mtime 0: the same bytes every time) and returns a
:class:`Corpus`: how many records the listed files hold (what the days' ``read`` must add up to), the
expected outcome counts (``written``, ``duplicate`` or a quarantine reason), the files no hour lists
with their line counts, and how many instances of each defect were written. Event days are
2026-10-01 and 2026-10-02 (the playback spec's first partition is 2026-10-01).

What each defect must become, and why:

* ``truncated_gzip`` — its intact lines are read and one ``unreadable_file`` record names the file and
  the error: failing the run would hold back every day of a multi-day backfill for one damaged object,
  and the loss is visible, per day, in the quarantine (the unknown rest of the file cannot be counted).
* ``zero_byte_file``, ``empty_gzip`` — read, hold no line: nothing to count.
* ``malformed_json``, ``nul_byte``, ``text_after_object`` (Spark's parser would ignore what follows the
  object) — ``malformed_json``.
* ``concatenated_records`` (``{...}{...}`` on one line: Firehose without a record delimiter) — the line is
  quarantined whole as ``multiple_json_values``, never read as its first record; ``braces_in_string``
  (``}{`` inside a string value) is one record, written.
* ``nan_in_optional_field``, ``nan_in_long_field``, ``infinity_in_long_field`` (``NaN``, ``-Infinity``: what
  Python's ``json.dumps`` writes for a float that is missing or infinite) — ``non_standard_number``, naming
  the token and the field (the playback stream keeps the default ``non_standard_numbers: quarantine``);
  ``nan_and_text_after_object`` — ``malformed_json``: the non-standard number is not its only defect.
* ``missing_event_id``, ``empty_event_id`` — ``missing_event_id``.
* ``missing_event_time``, ``unparseable_event_time``, ``date_only_time``, ``bare_year_time``,
  ``epoch_overflow`` — ``unparseable_event_time`` (a date is not an instant; 10^18 ms overflows).
* ``far_future_time`` — ``clock_skew`` (the producer's clock is beyond the allowed skew).
* ``before_first_partition`` — quarantined with that reason in the first partition: counted, not lost.
* ``unknown_schema_version`` — ``unknown_schema_version``.
* ``conflicting_duplicate`` (same day and across midnight) — the first delivery is written, the other
  payload quarantined as ``conflicting_duplicate``; one row per event id.
* ``identical_duplicate``, ``same_file_two_names`` — the second copies are duplicates.
* ``invalid_utf8`` — quarantined with its exact bytes, never with U+FFFD.
* ``long_line`` (5 MB) — ``line_too_long`` with its first KiB (bounded memory per line).
* ``bom``, ``crlf`` — read as if absent: the events are written unchanged.
* ``wrong_type_string``, ``wrong_type_overflow`` (``1e400``), ``wrong_type_fraction`` (``42.7`` for a
  long) — ``invalid_field``, never stored altered.
* ``uncompressed_among_gzip`` (a ``.jsonl``, and plain text named ``.jsonl.gz``) — read by content.
* ``outside_hour_layout``, ``hidden_file``, ``hour_before_first_window`` — reported as unlisted with
  their line counts.
"""

from __future__ import annotations

import gzip
import json
import math
import zlib
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

LAYOUT = "%Y/%m/%d/%H"
DAY1 = datetime(2026, 10, 1, tzinfo=UTC)
DAY2 = DAY1 + timedelta(days=1)
LONG_LINE_BYTES = 5_000_000
INVALID_UTF8 = b'{"event_id":"latin1","event_time":"2026-10-01T05:10:00.000Z","user_id":"J\xf6rg",' + (
    b'"title_id":"t1","event_type":"start","position_sec":1,"device":"tv"}'
)


@dataclass
class Corpus:
    root: Path
    lines: int = 0  # records of the listed files: the sum over days of `read`
    outcomes: Counter = field(default_factory=Counter)  # written / duplicate / quarantine reason
    unlisted: dict[str, int] = field(default_factory=dict)  # file name -> lines
    defects: Counter = field(default_factory=Counter)  # defect -> instances written


def iso(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"


def v1(event_id: str, at: datetime, /, **changes) -> str:
    record = {"event_id": event_id, "event_time": iso(at), "user_id": "u1", "title_id": "t1",
              "event_type": "start", "position_sec": 7, "device": "tv"}  # fmt: skip
    record.update(changes)
    return json.dumps({k: v for k, v in record.items() if v is not _DROP}, separators=(",", ":"))


def v2(event_id: str, at: datetime, /, **changes) -> str:
    record = {"schema_version": 2, "event_id": event_id, "event_time": int(at.timestamp() * 1000),
              "user_id": "u1", "title_id": "t1", "event_type": "stop", "position_sec": 42,
              "device_type": "mobile", "country": "BR"}  # fmt: skip
    record.update(changes)
    return json.dumps({k: v for k, v in record.items() if v is not _DROP}, separators=(",", ":"))


_DROP = object()


def _bytes(lines: list[str | bytes], newline: bytes = b"\n") -> bytes:
    return b"".join((x if isinstance(x, bytes) else x.encode()) + newline for x in lines)


class _Writer:
    def __init__(self, root: Path) -> None:
        self.corpus = Corpus(Path(root))

    def put(self, relative: str, data: bytes) -> Path:
        path = self.corpus.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return path

    def hour_file(
        self, hour: datetime, name: str, data: bytes, outcomes: list[str], defect: str = ""
    ) -> None:
        """A listed file of `hour`; `outcomes` holds one expected outcome per record it yields."""
        self.put(f"{hour.strftime(LAYOUT)}/{name}", data)
        self.corpus.lines += len(outcomes)
        self.corpus.outcomes.update(outcomes)
        if defect:
            self.corpus.defects[defect] += 1

    def lines(self, hour: datetime, name: str, rows: list[tuple[str | bytes, str]], defect: str = "") -> None:
        data = gzip.compress(_bytes([text for text, _ in rows]), mtime=0)
        self.hour_file(hour, name, data, [outcome for _, outcome in rows], defect)

    def unlisted(self, relative: str, rows: list[str], defect: str) -> None:
        self.put(relative, gzip.compress(_bytes(rows), mtime=0))
        self.corpus.unlisted[relative] = len(rows)
        self.corpus.defects[defect] += 1


def write_corpus(root: Path) -> Corpus:
    """Write the corpus under `root` (empty or absent) and return what a faithful ingestion must find."""
    w = _Writer(root)
    h = lambda day, hour: day + timedelta(hours=hour)  # noqa: E731
    at = lambda day, hour, minute=0, second=0: day + timedelta(hours=hour, minutes=minute, seconds=second)  # noqa: E731

    # Ordinary traffic: three events in every hour of both days, so no day or hour is empty.
    for day in (DAY1, DAY2):
        for hour in range(24):
            rows = [(v1(f"ok-{day:%d}-{hour:02d}-{i}", at(day, hour, 10 * i)), "written") for i in range(3)]
            w.lines(h(day, hour), "part-0001.jsonl.gz", rows)

    # A truncated gzip: five intact lines (ended by a full flush), then the stream is cut.
    compressor = zlib.compressobj(6, zlib.DEFLATED, 31)
    data = compressor.compress(_bytes([v1(f"trunc-{i}", at(DAY1, 3, 20 + i)) for i in range(5)]))
    data += compressor.flush(zlib.Z_FULL_FLUSH)
    cut = len(data)
    data += compressor.compress(_bytes([v1(f"trunc-lost-{i}", at(DAY1, 3, 30 + i)) for i in range(20)]))
    data += compressor.flush()
    w.hour_file(h(DAY1, 3), "truncated.jsonl.gz", data[: cut + 5], ["written"] * 5 + ["unreadable_file"],
                "truncated_gzip")  # fmt: skip

    w.hour_file(h(DAY1, 4), "zero.jsonl.gz", b"", [], "zero_byte_file")
    w.hour_file(h(DAY1, 4), "empty.jsonl.gz", gzip.compress(b"", mtime=0), [], "empty_gzip")

    t = at(DAY1, 5, 5)
    bad = [
        ('{"event_id":"cut","event_ti', "malformed_json", "malformed_json"),
        ("not json at all", "malformed_json", "malformed_json"),
        (v1("nul-1", t) + "\x00", "malformed_json", "nul_byte"),
        (v1("nul-2", t).replace('"u1"', '"a\x00b"'), "malformed_json", "nul_byte"),  # raw, not \u0000
        (v1("x", t, event_id=_DROP), "missing_event_id", "missing_event_id"),
        (v1("", t), "missing_event_id", "empty_event_id"),
        (v1("no-time", t, event_time=_DROP), "unparseable_event_time", "missing_event_time"),
        (v1("bad-time", t, event_time="not-a-time"), "unparseable_event_time", "unparseable_event_time"),
        (v1("date-only", t, event_time="2026-10-01"), "unparseable_event_time", "date_only_time"),
        (v1("bare-year", t, event_time="2026"), "unparseable_event_time", "bare_year_time"),
        (v2("epoch-overflow", t, event_time=10**18), "unparseable_event_time", "epoch_overflow"),
        (v1("far-future", t, event_time="9999-12-31T23:59:59.000Z"), "clock_skew", "far_future_time"),
        (v2("v3", t, schema_version=3), "unknown_schema_version", "unknown_schema_version"),
        (v2("type-string", t, position_sec="abc"), "invalid_field", "wrong_type_string"),
        (
            v2("type-overflow", t).replace('"position_sec":42', '"position_sec":1e400'),
            "invalid_field",
            "wrong_type_overflow",
        ),
        (v2("type-fraction", t, position_sec=42.7), "invalid_field", "wrong_type_fraction"),
        (INVALID_UTF8, "invalid_utf8", "invalid_utf8"),
        # Firehose without a record delimiter: two records on one line. Never the first alone.
        (v1("two-a", t) + v1("two-b", t), "multiple_json_values", "concatenated_records"),
        (v1("spaced-a", t) + "  " + v1("spaced-b", t), "multiple_json_values", "concatenated_records"),
        (v1("after", t) + "]x}", "malformed_json", "text_after_object"),
        (v1("brace", t, user_id='a"}{"b'), "written", "braces_in_string"),  # `}{` inside a string
        # Python's json.dumps writes a missing float as NaN: not JSON, named as what it is.
        (v2("nan-opt", t, country=math.nan), "non_standard_number", "nan_in_optional_field"),
        (v2("nan-long", t, position_sec=math.nan), "non_standard_number", "nan_in_long_field"),
        (v2("inf-long", t, position_sec=-math.inf), "non_standard_number", "infinity_in_long_field"),
        (v2("nan-after", t, country=math.nan) + " x", "malformed_json", "nan_and_text_after_object"),
    ]
    w.lines(h(DAY1, 5), "defects.jsonl.gz", [(text, outcome) for text, outcome, _ in bad])
    w.corpus.defects.update(defect for _, _, defect in bad)

    big = v1("big", at(DAY1, 6, 1), user_id="x" * LONG_LINE_BYTES)
    w.lines(h(DAY1, 6), "big.jsonl.gz", [(big, "line_too_long")], "long_line")

    # Duplicates: identical, and with another payload the same day and across midnight.
    w.lines(h(DAY1, 6), "dups-0001.jsonl.gz", [(v1("dup", at(DAY1, 6, 30)), "written"),
                                                (v1("conf", at(DAY1, 6, 40)), "written")])  # fmt: skip
    w.lines(h(DAY1, 8), "dups-0002.jsonl.gz", [(v1("dup", at(DAY1, 6, 30)), "duplicate"),
                                                (v1("conf", at(DAY1, 6, 40), position_sec=99),
                                                 "conflicting_duplicate")])  # fmt: skip
    w.corpus.defects.update(["identical_duplicate", "conflicting_duplicate"])
    w.lines(h(DAY1, 23), "midnight-0001.jsonl.gz", [(v1("midnight", at(DAY1, 23, 59, 30)), "written")])
    w.lines(h(DAY2, 0), "midnight-0002.jsonl.gz",
            [(v1("midnight", at(DAY2, 0, 0, 30)), "conflicting_duplicate")],
            "conflicting_duplicate_across_midnight")  # fmt: skip

    same = [(v1(f"same-{i}", at(DAY1, 9, i)), "written") for i in range(3)]
    w.lines(h(DAY1, 9), "copy-a.jsonl.gz", same)
    w.lines(h(DAY1, 9), "copy-b.jsonl.gz", [(text, "duplicate") for text, _ in same], "same_file_two_names")

    w.hour_file(h(DAY1, 10), "bom.jsonl.gz",
                gzip.compress(b"\xef\xbb\xbf" + _bytes([v1("bom-1", at(DAY1, 10, 1)), v1("bom-2", at(DAY1, 10, 2))]),
                              mtime=0), ["written", "written"], "bom")  # fmt: skip
    w.hour_file(h(DAY1, 10), "crlf.jsonl.gz",
                gzip.compress(_bytes([v1("crlf-1", at(DAY1, 10, 3)), v1("crlf-2", at(DAY1, 10, 4))], b"\r\n"),
                              mtime=0), ["written", "written"], "crlf")  # fmt: skip
    w.hour_file(h(DAY1, 11), "plain.jsonl", _bytes([v1("plain-1", at(DAY1, 11, 1)), v1("plain-2", at(DAY1, 11, 2))]),
                ["written", "written"], "uncompressed_among_gzip")  # fmt: skip
    w.hour_file(h(DAY1, 11), "plain-named.jsonl.gz", _bytes([v1("plain-3", at(DAY1, 11, 3))]), ["written"],
                "uncompressed_among_gzip")  # fmt: skip

    # Before the first partition: a line of a read hour of the previous day, and a late one after midnight.
    early = DAY1 - timedelta(hours=1)
    w.lines(early, "early.jsonl.gz", [(v1("early-1", at(early, 0, 10)), "before_first_partition"),
                                       (v1("early-2", at(DAY1, 0, 5)), "written")], "before_first_partition")  # fmt: skip
    w.lines(h(DAY1, 0), "late-0009.jsonl.gz", [(v1("early-3", at(early, 0, 30)), "before_first_partition")],
            "before_first_partition")  # fmt: skip

    # Files no hour lists.
    w.unlisted("2026/10/01/stray.jsonl.gz", [v1("stray-1", at(DAY1, 1)), v1("stray-2", at(DAY1, 2))],
               "outside_hour_layout")  # fmt: skip
    w.unlisted("2026/10/01/05/nested/x.jsonl.gz", [v1("nested", at(DAY1, 5))], "outside_hour_layout")
    w.unlisted("2026/10/01/12/_in-progress.jsonl.gz", [v1("hidden", at(DAY1, 12))], "hidden_file")
    w.unlisted("2026/09/30/10/old.jsonl.gz", [v1("old-1", at(early, -13)), v1("old-2", at(early, -13, 1))],
               "hour_before_first_window")  # fmt: skip
    return w.corpus
