"""Deterministic generator of a synthetic, Firehose-style archive of Netflix-like playback events.

The story: viewers (``u000001``...) on TVs, phones, browsers and consoles in a handful of countries
start titles (``t0001``...; a few hits get most of the plays), sometimes pause and resume, and stop.
Each event is sent by the device and lands in an hourly, gzipped JSON-lines object written by a
delivery stream (``root/%Y/%m/%d/%H/playback-%Y-%m-%d-%H-0001.jsonl.gz``), foldered by *ingestion*
hour. Real pipelines are messy, so the archive is too:

* the producer schema changes at noon UTC of day ``days // 2`` (v1 -> v2: ISO event time becomes
  epoch milliseconds, ``device`` is renamed ``device_type``, ``country`` appears, ``schema_version: 2``);
* some events arrive hours late (some across midnight), a few days late (beyond the allowed lateness);
* some devices' clocks run a few minutes ahead, a few are days ahead (broken clock);
* the stream re-delivers some lines (at-least-once), occasionally with a different payload;
* a few lines are malformed (truncated JSON, no ``event_id``, garbage ``event_time``).

Alongside the archive, ``root/_truth.json`` holds the exact per-event-day accounting a correct
ingestion must produce (see :mod:`backfill_platform.devtools.generator.truth` for the rules). The truth is
computed by applying those rules to the lines actually written, not from the generator's intentions.

Everything is derived from ``GeneratorConfig.seed``: the same config yields byte-identical files.
"""

from __future__ import annotations

import calendar
import datetime as dt
import gzip
import json
import random
import time
from bisect import bisect_right
from dataclasses import asdict, dataclass, fields
from itertools import accumulate
from pathlib import Path

from backfill_platform.devtools.generator.truth import (
    DAY_MS,
    HOUR_MS,
    TRUTH_FILE_NAME,
    ArchiveLine,
    compute_partitions,
)

MINUTE_MS = 60_000

N_TITLES = 200
N_USERS = 20_000
DEVICES: tuple[str, ...] = ("tv", "mobile", "web", "console")
DEVICE_WEIGHTS: tuple[float, ...] = (0.45, 0.30, 0.15, 0.10)
COUNTRIES: tuple[str, ...] = ("US", "BR", "GB", "DE", "IN", "JP", "MX", "FR")
COUNTRY_WEIGHTS: tuple[float, ...] = (0.35, 0.15, 0.10, 0.08, 0.12, 0.07, 0.08, 0.05)
# Relative session starts per UTC hour: a global audience with an evening-Americas/Europe peak.
HOUR_WEIGHTS: tuple[float, ...] = (
    6, 5, 4, 3, 2, 2, 2, 2, 3, 3, 4, 4, 5, 5, 5, 6, 6, 7, 8, 9, 10, 10, 9, 8,
)  # fmt: skip
# Pause/resume pairs per session (0..3) and the chance a session ends with an explicit stop.
PAUSE_PAIR_WEIGHTS: tuple[float, ...] = (0.55, 0.25, 0.13, 0.07)
STOP_PROBABILITY = 0.9
_encode_json = json.JSONEncoder(separators=(",", ":")).encode
MALFORMED_KINDS: tuple[str, ...] = ("truncated_json", "missing_event_id", "unparseable_event_time")


@dataclass(frozen=True)
class GeneratorConfig:
    """Knobs of the synthetic archive; fractions are per generated event."""

    start: dt.date  # first event-time day (UTC)
    days: int = 7
    events_per_day: int = 100_000
    seed: int = 7
    allowed_lateness: dt.timedelta = dt.timedelta(hours=8)
    clock_skew: dt.timedelta = dt.timedelta(minutes=15)
    duplicate_fraction: float = 0.01  # identical line re-delivered 1-3 h later
    late_fraction: float = 0.03  # delivered 1-6 h after the event
    very_late_fraction: float = 0.0002  # delivered 1-3 days after the event (beyond lateness)
    clock_ahead_fraction: float = 0.002  # recorded event time 1-10 min ahead of real time
    broken_clock_fraction: float = 0.0001  # recorded event time ~3 days ahead of real time
    malformed_fraction: float = 0.001  # truncated JSON / missing event_id / garbage event_time
    conflicting_duplicate_fraction: float = 0.0005  # same event_id re-delivered with another payload
    files_per_hour: int = 1  # an hour's lines split over this many files, as several writers would
    # An empty file in every quiet hour between the first and the last: a quiet stream's days then settle
    # by hours without `allow_empty_hours` (the bench's year of small files measures the built-in stream).
    file_every_hour: bool = False

    def __post_init__(self) -> None:
        if self.days < 1 or self.events_per_day < 1 or self.files_per_hour < 1:
            raise ValueError("days, events_per_day and files_per_hour must be positive")
        delivery = (
            self.late_fraction
            + self.very_late_fraction
            + self.clock_ahead_fraction
            + self.broken_clock_fraction
        )
        copies = self.malformed_fraction + self.duplicate_fraction + self.conflicting_duplicate_fraction
        for name, value in (("delivery", delivery), ("malformed/duplicate", copies)):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} fractions must sum to a value in [0, 1], got {value}")

    @property
    def schema_change_ms(self) -> int:
        """Event time (epoch ms) from which producers emit schema v2: noon UTC of day ``days // 2``."""
        return _date_ms(self.start) + (self.days // 2) * DAY_MS + 12 * HOUR_MS

    def to_dict(self) -> dict:
        """JSON-serializable form: ISO date for ``start``, timedeltas as ``<name>_seconds``."""
        out: dict = {}
        for key, value in asdict(self).items():
            if isinstance(value, dt.timedelta):
                out[f"{key}_seconds"] = _num(value.total_seconds())
            elif isinstance(value, dt.date):
                out[key] = value.isoformat()
            else:
                out[key] = value
        return out

    @classmethod
    def from_dict(cls, data: dict) -> GeneratorConfig:
        """Inverse of :meth:`to_dict`."""
        kwargs: dict = {}
        for f in fields(cls):
            if f.name in ("allowed_lateness", "clock_skew"):
                if f"{f.name}_seconds" in data:
                    kwargs[f.name] = dt.timedelta(seconds=data[f"{f.name}_seconds"])
            elif f.name == "start":
                kwargs[f.name] = dt.date.fromisoformat(data["start"])
            elif f.name in data:
                kwargs[f.name] = data[f.name]
        return cls(**kwargs)


def _num(x: float) -> int | float:
    return int(x) if float(x).is_integer() else x


def _date_ms(day: dt.date) -> int:
    return calendar.timegm(day.timetuple()) * 1000


def _iso_ms(ms: int) -> str:
    """Format epoch ms as ``YYYY-MM-DDTHH:MM:SS.mmmZ``."""
    sec, milli = divmod(ms, 1000)
    return f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(sec))}.{milli:03d}Z"


def archive_relative_path(hb_ms: int, part: int = 1) -> str:
    """Relative path of the `part`-th archive file (1-based) of the ingestion hour starting at ``hb_ms``."""
    tm = time.gmtime(hb_ms // 1000)
    folder = time.strftime("%Y/%m/%d/%H", tm)
    return f"{folder}/playback-{time.strftime('%Y-%m-%d-%H', tm)}-{part:04d}.jsonl.gz"


class _Builder:
    """Holds the RNG and the lines per ingestion hour while events are generated."""

    def __init__(self, config: GeneratorConfig) -> None:
        self.cfg = config
        self.rng = random.Random(config.seed)
        self.lines: dict[int, list[str]] = {}
        self.cutoff_ms: int | None = None  # no ingestion hour from here on (the archive's end)
        self.used_ids: set[str] = set()
        self.malformed_counter = self.rng.randrange(len(MALFORMED_KINDS))
        rng = self.rng
        self.user_device = rng.choices(DEVICES, weights=DEVICE_WEIGHTS, k=N_USERS)
        self.user_country = rng.choices(COUNTRIES, weights=COUNTRY_WEIGHTS, k=N_USERS)
        self.title_cum = list(accumulate(1.0 / (rank**1.07) for rank in range(1, N_TITLES + 1)))
        self.hour_cum = list(accumulate(HOUR_WEIGHTS))
        self.pairs_cum = list(accumulate(PAUSE_PAIR_WEIGHTS))
        c = config
        self.delivery_cum = list(
            accumulate(
                (c.late_fraction, c.very_late_fraction, c.clock_ahead_fraction, c.broken_clock_fraction)
            )
        )
        self.copies_cum = list(
            accumulate((c.malformed_fraction, c.duplicate_fraction, c.conflicting_duplicate_fraction))
        )

    def new_event_id(self) -> str:
        while True:
            eid = f"e{self.rng.getrandbits(48):012x}"
            if eid not in self.used_ids:
                self.used_ids.add(eid)
                return eid

    def emit(self, hb_ms: int, line: str) -> None:
        if self.cutoff_ms is not None and hb_ms >= self.cutoff_ms:
            return
        bucket = self.lines.get(hb_ms)
        if bucket is None:
            bucket = self.lines[hb_ms] = []
        bucket.append(line)

    def sessions(self) -> None:
        """Generate sessions day by day until each day has produced ``events_per_day`` events."""
        rng = self.rng
        cfg = self.cfg
        start_ms = _date_ms(cfg.start)
        end_ms = start_ms + cfg.days * DAY_MS
        hour_total = self.hour_cum[-1]
        title_total = self.title_cum[-1]
        # The stream does not stop at the last day: its next day's traffic keeps arriving until the last
        # day's lateness horizon, so that every day of the range has a complete read window (settles).
        horizon_ms = end_ms + int(cfg.allowed_lateness.total_seconds() * 1000) + HOUR_MS
        for day in range(cfg.days + 1):
            day_ms = start_ms + day * DAY_MS
            if day == cfg.days:
                end_ms, self.cutoff_ms = end_ms + DAY_MS, horizon_ms
            produced = 0
            while produced < cfg.events_per_day:
                hour = bisect_right(self.hour_cum, rng.random() * hour_total)
                t = day_ms + hour * HOUR_MS + rng.randrange(HOUR_MS)
                user = rng.randrange(N_USERS)
                title = min(bisect_right(self.title_cum, rng.random() * title_total), N_TITLES - 1)
                device = self.user_device[user]
                if rng.random() < 0.15:  # the same account on another device
                    device = rng.choice(DEVICES)
                pos = 0 if rng.random() < 0.6 else rng.randint(60, 3000)
                events = [("start", t, pos)]
                pairs = bisect_right(self.pairs_cum, rng.random() * self.pairs_cum[-1])
                for _ in range(min(pairs, len(PAUSE_PAIR_WEIGHTS) - 1)):
                    watch = 1000 + int(rng.expovariate(1.0 / (15 * MINUTE_MS)))
                    t += watch
                    pos += watch // 1000
                    events.append(("pause", t, pos))
                    t += 1000 + int(rng.expovariate(1.0 / (3 * MINUTE_MS)))
                    events.append(("resume", t, pos))
                if rng.random() < STOP_PROBABILITY:
                    watch = 1000 + int(rng.expovariate(1.0 / (20 * MINUTE_MS)))
                    t += watch
                    pos += watch // 1000
                    events.append(("stop", t, pos))
                for event_type, real_ms, position in events[: cfg.events_per_day - produced]:
                    produced += 1
                    if real_ms >= end_ms:  # keep real event times inside the configured range
                        continue
                    self.event(
                        real_ms,
                        f"u{user + 1:06d}",
                        f"t{title + 1:04d}",
                        event_type,
                        position,
                        device,
                        self.user_country[user],
                    )

    def event(
        self, real_ms: int, user: str, title: str, event_type: str, pos: int, device: str, country: str
    ) -> None:
        """Decide delivery for one event and emit its line(s)."""
        rng = self.rng
        recorded_ms = real_ms
        hb = real_ms - real_ms % HOUR_MS
        u = rng.random()
        late, very_late, ahead, broken = self.delivery_cum
        if u < late:
            arrival = real_ms + rng.randint(HOUR_MS, 6 * HOUR_MS)
            hb = arrival - arrival % HOUR_MS
        elif u < very_late:
            arrival = real_ms + rng.randint(DAY_MS, 3 * DAY_MS)
            hb = arrival - arrival % HOUR_MS
        elif u < ahead:
            recorded_ms = real_ms + rng.randint(MINUTE_MS, 10 * MINUTE_MS)
        elif u < broken:
            recorded_ms = real_ms + 3 * DAY_MS + rng.randint(-30 * MINUTE_MS, 30 * MINUTE_MS)

        v2 = real_ms >= self.cfg.schema_change_ms
        eid = self.new_event_id()
        if v2:
            record: dict = {
                "schema_version": 2,
                "event_id": eid,
                "event_time": recorded_ms,
                "user_id": user,
                "title_id": title,
                "event_type": event_type,
                "position_sec": pos,
                "device_type": device,
                "country": country,
            }
        else:
            record = {
                "event_id": eid,
                "event_time": _iso_ms(recorded_ms),
                "user_id": user,
                "title_id": title,
                "event_type": event_type,
                "position_sec": pos,
                "device": device,
            }
        line = _encode_json(record)

        u = rng.random()
        malformed, duplicate, conflicting = self.copies_cum
        if u < malformed:
            kind = MALFORMED_KINDS[self.malformed_counter % len(MALFORMED_KINDS)]
            self.malformed_counter += 1
            if kind == "truncated_json":
                line = line[: len(line) // 2]
            elif kind == "missing_event_id":
                del record["event_id"]
                line = _encode_json(record)
            else:
                record["event_time"] = "17x" if v2 else "not-a-time"
                line = _encode_json(record)
            self.emit(hb, line)
        elif u < duplicate:
            self.emit(hb, line)
            self.emit(hb + rng.randint(1, 3) * HOUR_MS, line)
        elif u < conflicting:
            self.emit(hb, line)
            record["position_sec"] = pos + rng.randint(1, 120)
            self.emit(hb + rng.randint(1, 3) * HOUR_MS, _encode_json(record))
        else:
            self.emit(hb, line)


def generate_playback_archive(root: Path, config: GeneratorConfig) -> dict:
    """Write the synthetic archive under ``root`` plus ``root/_truth.json``; return the truth dict.

    ``root`` should be empty or absent: existing files are overwritten, unrelated ones are left alone
    (and would not be accounted for in the truth).
    """
    root = Path(root)
    builder = _Builder(config)
    builder.sessions()

    total_lines = total_files = total_bytes = 0
    archive: list[ArchiveLine] = []
    if config.file_every_hour and builder.lines:
        for hb in range(min(builder.lines), max(builder.lines), HOUR_MS):
            builder.lines.setdefault(hb, [])
    for hb in sorted(builder.lines):
        lines = builder.lines[hb]
        builder.rng.shuffle(lines)  # deterministic arrival order within the hour
        # Several writers: consecutive slices of the hour's arrivals, one file each (none empty).
        parts = max(1, min(config.files_per_hour, len(lines)))
        for part in range(parts):
            chunk = lines[part * len(lines) // parts : (part + 1) * len(lines) // parts]
            path = root / archive_relative_path(hb, part + 1)
            path.parent.mkdir(parents=True, exist_ok=True)
            text = "".join(f"{line}\n" for line in chunk)
            data = gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0)
            path.write_bytes(data)
            total_files += 1
            total_bytes += len(data)
            total_lines += len(chunk)
            archive.extend(ArchiveLine(hb, path.name, i, text) for i, text in enumerate(chunk, start=1))

    lateness_ms = int(config.allowed_lateness.total_seconds() * 1000)
    skew_ms = int(config.clock_skew.total_seconds() * 1000)
    truth = {
        "config": config.to_dict(),
        "lateness_hours": _num(config.allowed_lateness.total_seconds() / 3600),
        "clock_skew_minutes": _num(config.clock_skew.total_seconds() / 60),
        "schema_change_event_time": _iso_ms(config.schema_change_ms),
        "totals": {"lines": total_lines, "files": total_files, "bytes": total_bytes},
        "partitions": compute_partitions(archive, lateness_ms, skew_ms),
    }
    root.mkdir(parents=True, exist_ok=True)
    (root / TRUTH_FILE_NAME).write_text(json.dumps(truth, indent=2) + "\n")
    return truth
