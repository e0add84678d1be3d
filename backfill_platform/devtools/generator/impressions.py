"""The impressions beside a playback archive, and the independent truth of each play's attribution.

The story (seed 003's own case): a title is shown to a viewer on a row of the home page (an
impression); most plays follow one within minutes. The impressions are derived from the plays the
platform keeps in a playback archive (`truth.py`'s rules: well-formed, admissible, one copy per id):

* before 80% of the plays, an impression of the same title to the same viewer, 5 s to 20 min earlier
  (so a play just after midnight is often led by an impression of the day before), none before the
  first day of the playback archive;
* stray impressions that lead to no play (30% as many as plays), at random times of the range;
* 5% of the lines are delivered 1 to 6 hours late (within the allowed lateness), some across midnight.

`attribution_truth` computes, in plain Python from the archives' lines, what the `attributed_plays`
dataset must hold: each play's latest impression of its title to its viewer within the 30 minutes
before it, with or without the impressions of the day before (the fixed and the buggy version).
"""

from __future__ import annotations

import gzip
import json
import random
from calendar import timegm
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

from backfill_platform.devtools.generator.truth import (
    DAY_MS,
    HOUR_MS,
    classify_line,
    iter_archive_files,
    ms_to_day,
)

MINUTE_MS = 60_000
ROWS = ("continue_watching", "trending", "because_you_watched", "new_releases")
LED_FRACTION, STRAY_FRACTION, LATE_FRACTION = 0.8, 0.3, 0.05
MAX_LEAD_MS = 20 * MINUTE_MS
TRUTH_FILE_NAME = "_truth.json"
_encode = json.JSONEncoder(separators=(",", ":")).encode


def _iso_ms(ms: int) -> str:
    seconds, millis = divmod(ms, 1000)
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{millis:03d}Z"


def _records(root: Path, lateness_ms: int, skew_ms: int, marker: str = "") -> dict[str, dict]:
    """The records the platform keeps from an hourly archive: well-formed, admissible in their ingestion
    hour (`hb - lateness <= t < hb + 1h + skew`), the first admissible copy of each id (earliest hour).
    Only lines containing `marker` are parsed (a cheap pre-filter: every copy of an event carries it)."""
    kept: dict[str, dict] = {}
    for path in iter_archive_files(root):
        hour = path.parent.relative_to(root).parts
        hb_ms = _hour_ms(*map(int, hour))
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            for text in lines:
                if marker not in text:
                    continue
                reason, record, t = classify_line(text.rstrip("\n"))
                if reason or t is None or not hb_ms - lateness_ms <= t < hb_ms + HOUR_MS + skew_ms:
                    continue
                previous = kept.get(record["event_id"])
                if previous is None or hb_ms < previous["_hb"]:
                    kept[record["event_id"]] = {**record, "_t": t, "_hb": hb_ms}
    return kept


def _hour_ms(year: int, month: int, day: int, hour: int) -> int:
    return timegm((year, month, day, hour, 0, 0)) * 1000


def playback_starts(root: Path, lateness: timedelta, skew: timedelta) -> list[dict]:
    """The plays (`start` events) the platform keeps from a playback archive, in event-time order."""
    lateness_ms, skew_ms = int(lateness.total_seconds() * 1000), int(skew.total_seconds() * 1000)
    records = _records(root, lateness_ms, skew_ms, marker='"start"')
    starts = [r for r in records.values() if r.get("event_type") == "start"]
    return sorted(starts, key=lambda r: (r["_t"], r["event_id"]))


def generate_impressions_archive(
    root: Path,
    playback_root: Path,
    seed: int = 11,
    lateness: timedelta = timedelta(hours=8),
    skew: timedelta = timedelta(minutes=15),
) -> dict:
    """Write the impressions of the plays of `playback_root` under `root` (hourly gzipped JSON lines,
    deterministic for a seed) and `root/_truth.json`; return its content."""
    rng = random.Random(seed)
    plays = playback_starts(playback_root, lateness, skew)
    if not plays:
        raise ValueError(f"no plays in {playback_root}: generate the playback archive first")
    first, last = plays[0]["_t"], plays[-1]["_t"]
    # The impressions archive starts with the playback one: the first plays of its first day have none.
    opening = first - first % DAY_MS
    shown: list[tuple[int, str, str]] = []
    for play in plays:
        if rng.random() < LED_FRACTION:
            t = play["_t"] - rng.randint(5_000, MAX_LEAD_MS)
            if t >= opening:
                shown.append((t, play["user_id"], play["title_id"]))
    for _ in range(int(len(plays) * STRAY_FRACTION)):
        other = plays[rng.randrange(len(plays))]
        shown.append(
            (rng.randint(first, last), other["user_id"], plays[rng.randrange(len(plays))]["title_id"])
        )
    files: dict[int, list[str]] = defaultdict(list)
    per_day: dict[str, int] = defaultdict(int)
    late = 0
    for number, (t, user, title) in enumerate(sorted(shown), start=1):
        arrival = t + (rng.randint(HOUR_MS, 6 * HOUR_MS) if rng.random() < LATE_FRACTION else 0)
        late += arrival != t
        record = {"event_id": f"i{number:09d}", "event_time": _iso_ms(t), "user_id": user, "title_id": title}
        files[arrival - arrival % HOUR_MS].append(_encode({**record, "row": rng.choice(ROWS)}))
        per_day[ms_to_day(t)] += 1
    for hb, lines in sorted(files.items()):
        day, hour = ms_to_day(hb), (hb % DAY_MS) // HOUR_MS
        folder = root / day.replace("-", "/") / f"{hour:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        data = gzip.compress(("\n".join(lines) + "\n").encode(), compresslevel=6, mtime=0)
        (folder / f"impressions-{day}-{hour:02d}-0001.jsonl.gz").write_bytes(data)
    truth = {
        "seed": seed,
        "totals": {"lines": len(shown), "files": len(files), "late": late, "plays": len(plays)},
        "per_day": dict(sorted(per_day.items())),
    }
    (root / TRUTH_FILE_NAME).write_text(json.dumps(truth, indent=2) + "\n")
    return truth


def attribution_truth(
    playback_root: Path,
    impressions_root: Path,
    days: list[str],
    lookback: timedelta = timedelta(minutes=30),
    same_day_only: bool = False,
    lateness: timedelta = timedelta(hours=8),
    skew: timedelta = timedelta(minutes=15),
) -> dict[str, dict]:
    """Each play of `days` (by id): its day, hour, viewer, title, and the latest impression of that title
    to that viewer within `lookback` before it (ties: the greatest impression id), or None; with
    `same_day_only`, only impressions of the play's own day count (the buggy version)."""
    fixed, buggy = both_attributions(playback_root, impressions_root, days, lookback, lateness, skew)
    return buggy if same_day_only else fixed


def both_attributions(
    playback_root: Path,
    impressions_root: Path,
    days: list[str],
    lookback: timedelta = timedelta(minutes=30),
    lateness: timedelta = timedelta(hours=8),
    skew: timedelta = timedelta(minutes=15),
) -> tuple[dict[str, dict], dict[str, dict]]:
    """`attribution_truth` of the fixed and of the buggy (same day only) version, reading the archives once."""
    window_ms = int(lookback.total_seconds() * 1000)
    lateness_ms, skew_ms = int(lateness.total_seconds() * 1000), int(skew.total_seconds() * 1000)
    by_viewer_title: dict[tuple[str, str], list[tuple[int, str]]] = defaultdict(list)
    for record in _records(impressions_root, lateness_ms, skew_ms).values():
        by_viewer_title[(record["user_id"], record["title_id"])].append((record["_t"], record["event_id"]))
    plays = [p for p in playback_starts(playback_root, lateness, skew) if ms_to_day(p["_t"]) in days]
    fixed, buggy = {}, {}
    for play in plays:
        t, day = play["_t"], ms_to_day(play["_t"])
        led = [c for c in by_viewer_title[(play["user_id"], play["title_id"])] if 0 <= t - c[0] <= window_ms]
        for result, candidates in (
            (fixed, led),
            (buggy, [c for c in led if ms_to_day(c[0]) == day]),
        ):
            best = max(candidates, default=None)
            result[play["event_id"]] = {
                "day": day,
                "hour": (t % DAY_MS) // HOUR_MS,
                "user_id": play["user_id"],
                "title_id": play["title_id"],
                "impression_id": best[1] if best else None,
                "seconds_to_play": (t - best[0]) // 1000 if best else None,
                "across_midnight": bool(best) and ms_to_day(best[0]) != day,
            }
    return fixed, buggy
