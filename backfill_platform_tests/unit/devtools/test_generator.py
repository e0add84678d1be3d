"""Tests for the synthetic playback archive generator: layout, determinism, realism and exact truth.

The truth is re-derived here from the files alone with a small, independent implementation of the
accounting rules (folder-derived ingestion hour, ``strptime`` time parsing, plain dict bookkeeping).
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from backfill_platform.devtools.generator import GeneratorConfig, generate_playback_archive

UTC = dt.UTC
START = dt.date(2026, 10, 1)
REASONS = (
    "malformed_json",
    "missing_event_id",
    "unparseable_event_time",
    "too_late",
    "clock_skew",
    "conflicting_duplicate",
)

V1_KEYS = ["event_id", "event_time", "user_id", "title_id", "event_type", "position_sec", "device"]
V2_KEYS = [
    "schema_version",
    "event_id",
    "event_time",
    "user_id",
    "title_id",
    "event_type",
    "position_sec",
    "device_type",
    "country",
]
FILE_RE = re.compile(
    r"^(\d{4})/(\d{2})/(\d{2})/(\d{2})/playback-(\d{4})-(\d{2})-(\d{2})-(\d{2})-0001\.jsonl\.gz$"
)


def _read_lines(root: Path) -> list[tuple[dt.datetime, str, int, str]]:
    """All archive lines as (ingestion hour, file name, 1-based line number, raw text)."""
    out = []
    for path in sorted(root.rglob("*.jsonl.gz")):
        y, m, d, h = (int(p) for p in path.relative_to(root).parts[:4])
        hb = dt.datetime(y, m, d, h, tzinfo=UTC)
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            for i, raw in enumerate(fh, start=1):
                out.append((hb, path.name, i, raw.rstrip("\n")))
    return out


def _parse_time(value: object) -> dt.datetime | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(milliseconds=value)
    if isinstance(value, str):
        try:
            return dt.datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%f%z")
        except ValueError:
            return None
    return None


def _classify(text: str) -> tuple[str | None, dict | None, dt.datetime | None]:
    try:
        rec = json.loads(text)
    except json.JSONDecodeError:
        return "malformed_json", None, None
    if not rec.get("event_id"):
        return "missing_event_id", rec, None
    t = _parse_time(rec.get("event_time"))
    if t is None:
        return "unparseable_event_time", rec, None
    return None, rec, t


def _recompute(lines: list, lateness: dt.timedelta, skew: dt.timedelta) -> dict:
    """Independent re-implementation of the truth rules over lines read back from the files."""
    parts: dict = defaultdict(
        lambda: {
            "records": 0,
            "written": 0,
            "duplicates": 0,
            "conflicting_ids": 0,
            "quarantined": dict.fromkeys(REASONS, 0),
            "late": 0,
            "starts": 0,
            "starts_by_hour": {str(h): 0 for h in range(24)},
        }
    )
    admissible: dict[str, list] = defaultdict(list)
    for hb, name, line_no, text in lines:
        reason, rec, t = _classify(text)
        if reason is None:
            if t < hb - lateness:
                reason = "too_late"
            elif t >= hb + dt.timedelta(hours=1) + skew:
                reason = "clock_skew"
        if reason:
            parts[hb.date().isoformat()]["records"] += 1
            parts[hb.date().isoformat()]["quarantined"][reason] += 1
        else:
            parts[t.date().isoformat()]["records"] += 1
            admissible[rec["event_id"]].append((hb, name, line_no, t, rec, text))
    for copies in admissible.values():
        copies.sort(key=lambda c: c[:3])
        hb, _, _, t, rec, _ = copies[0]
        p = parts[t.date().isoformat()]
        p["written"] += 1
        # A copy with another payload than the kept one is quarantined, so that payload is kept.
        conflicting = sum(c[5] != copies[0][5] for c in copies[1:])
        p["duplicates"] += len(copies) - 1 - conflicting
        p["quarantined"]["conflicting_duplicate"] += conflicting
        p["conflicting_ids"] += conflicting > 0
        p["late"] += hb > t.replace(minute=0, second=0, microsecond=0)
        if rec["event_type"] == "start":
            p["starts"] += 1
            p["starts_by_hour"][str(t.hour)] += 1
    return dict(parts)


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, GeneratorConfig, dict, list]:
    root = tmp_path_factory.mktemp("archive")
    config = GeneratorConfig(start=START, days=3, events_per_day=4_000, seed=11)
    truth = generate_playback_archive(root, config)
    return root, config, truth, _read_lines(root)


def _tree_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_seed_is_byte_identical_and_other_seed_differs(tmp_path: Path) -> None:
    config = GeneratorConfig(start=START, days=2, events_per_day=1_000, seed=3)
    generate_playback_archive(tmp_path / "a", config)
    generate_playback_archive(tmp_path / "b", config)
    generate_playback_archive(
        tmp_path / "c", GeneratorConfig(start=START, days=2, events_per_day=1_000, seed=4)
    )
    a, b, c = (_tree_bytes(tmp_path / x) for x in "abc")
    assert a == b
    assert a != c
    assert set(a) & set(c)  # same layout of hours, different content
    assert all(a[k] != c[k] for k in set(a) & set(c) if k.endswith(".gz"))


def test_layout_and_truth_file(archive: tuple) -> None:
    root, config, truth, lines = archive
    files = sorted(p for p in root.rglob("*") if p.is_file())
    gz = [p for p in files if p.name.endswith(".jsonl.gz")]
    assert [p for p in files if p not in gz] == [root / "_truth.json"]
    for path in gz:
        m = FILE_RE.match(path.relative_to(root).as_posix())
        assert m, path
        assert m.groups()[:4] == m.groups()[4:]
        header = path.read_bytes()[:10]
        assert header[:2] == b"\x1f\x8b" and header[4:8] == b"\x00\x00\x00\x00"  # gzip, mtime=0
        assert gzip.decompress(path.read_bytes())  # no empty files
    assert json.loads((root / "_truth.json").read_text()) == truth
    assert truth["lateness_hours"] == 8 and truth["clock_skew_minutes"] == 15
    assert GeneratorConfig.from_dict(truth["config"]) == config
    # Ingestion hours extend past the last event-time day (late deliveries).
    last_day = START + dt.timedelta(days=config.days - 1)
    assert max(hb for hb, *_ in lines).date() > last_day


def test_every_line_counted_exactly_once(archive: tuple) -> None:
    root, _config, truth, lines = archive
    totals = truth["totals"]
    assert totals["lines"] == len(lines)
    assert totals["files"] == len(list(root.rglob("*.jsonl.gz")))
    assert totals["bytes"] == sum(p.stat().st_size for p in root.rglob("*.jsonl.gz"))
    assert sum(p["records"] for p in truth["partitions"].values()) == len(lines)
    for day, p in truth["partitions"].items():
        assert p["records"] == p["written"] + p["duplicates"] + sum(p["quarantined"].values()), day
        assert sum(p["starts_by_hour"].values()) == p["starts"], day
        assert set(p["quarantined"]) == set(REASONS)


def test_truth_matches_independent_recomputation(archive: tuple) -> None:
    _root, config, truth, lines = archive
    expected = _recompute(lines, config.allowed_lateness, config.clock_skew)
    assert truth["partitions"] == dict(sorted(expected.items()))
    # Partitions after the range exist (very late / broken clock lines are attributed to their hour).
    assert list(truth["partitions"])[: config.days] == [
        (START + dt.timedelta(days=i)).isoformat() for i in range(config.days)
    ]


def test_both_schema_versions(archive: tuple) -> None:
    _root, config, _truth, lines = archive
    change = dt.datetime.combine(START, dt.time(12), tzinfo=UTC) + dt.timedelta(days=config.days // 2)
    versions: Counter = Counter()
    for *_, text in lines:
        reason, rec, t = _classify(text)
        if reason is not None:
            continue
        if "schema_version" in rec:
            assert rec["schema_version"] == 2 and list(rec) == V2_KEYS
            assert isinstance(rec["event_time"], int) and t >= change
            assert rec["country"] in {"US", "BR", "GB", "DE", "IN", "JP", "MX", "FR"}
            assert rec["device_type"] in {"tv", "mobile", "web", "console"}
            versions[2] += 1
        else:
            assert list(rec) == V1_KEYS
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", rec["event_time"])
            versions[1] += 1
        assert re.fullmatch(r"e[0-9a-f]{12}", rec["event_id"])
        assert re.fullmatch(r"u\d{6}", rec["user_id"]) and re.fullmatch(r"t\d{4}", rec["title_id"])
    assert versions[1] > 1_000 and versions[2] > 1_000


def test_malformed_lines_of_each_kind_at_realistic_rate(archive: tuple) -> None:
    _root, config, truth, lines = archive
    kinds = Counter(_classify(text)[0] for *_, text in lines)
    malformed = {k: kinds[k] for k in REASONS[:3]}
    assert all(n >= 1 for n in malformed.values()), malformed
    rate = sum(malformed.values()) / len(lines)
    assert config.malformed_fraction / 3 <= rate <= config.malformed_fraction * 3, rate
    for reason, n in malformed.items():
        assert sum(p["quarantined"][reason] for p in truth["partitions"].values()) == n


def test_realistic_mix(archive: tuple) -> None:
    _root, config, truth, lines = archive
    parts = [truth["partitions"][(START + dt.timedelta(days=i)).isoformat()] for i in range(config.days)]
    written = sum(p["written"] for p in parts)
    assert 0.25 <= sum(p["starts"] for p in parts) / written <= 0.35
    assert sum(p["duplicates"] for p in parts) > 0
    assert sum(p["conflicting_ids"] for p in parts) > 0
    assert sum(p["late"] for p in parts) > 0
    types = Counter(json.loads(text)["event_type"] for *_, text in lines if _classify(text)[0] is None)
    assert set(types) == {"start", "pause", "resume", "stop"}


def test_late_event_across_midnight_exists(archive: tuple) -> None:
    _root, config, _truth, lines = archive
    crossing = []
    for hb, _name, _no, text in lines:
        reason, _rec, t = _classify(text)
        if reason is None and hb - config.allowed_lateness <= t < hb and hb.date() > t.date():
            crossing.append((hb, t))
    assert crossing
    assert any(dt.timedelta(hours=1) <= hb - t <= dt.timedelta(hours=7) for hb, t in crossing)


def test_rare_paths_boosted(tmp_path: Path) -> None:
    """With boosted rare fractions every quarantine reason shows up and the truth still matches."""
    config = GeneratorConfig(
        start=START,
        days=2,
        events_per_day=2_000,
        seed=5,
        very_late_fraction=0.01,
        broken_clock_fraction=0.01,
        clock_ahead_fraction=0.05,
        conflicting_duplicate_fraction=0.02,
        duplicate_fraction=0.05,
        malformed_fraction=0.01,
    )
    truth = generate_playback_archive(tmp_path, config)
    lines = _read_lines(tmp_path)
    assert truth["partitions"] == dict(
        sorted(_recompute(lines, config.allowed_lateness, config.clock_skew).items())
    )
    quarantined: Counter = Counter()
    for p in truth["partitions"].values():
        quarantined.update(p["quarantined"])
    assert all(quarantined[r] > 0 for r in REASONS), quarantined
    last_day = START + dt.timedelta(days=config.days - 1)
    assert max(dt.date.fromisoformat(d) for d in truth["partitions"]) > last_day + dt.timedelta(days=1)
