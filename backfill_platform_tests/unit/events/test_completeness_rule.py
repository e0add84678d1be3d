"""The rule of 'settled' (pipeline/events/completeness.py), on the demo stream's spec: when a day settles
(its end, plus the allowed lateness, plus an hour), which archive hours it needs, and which of them are
missing or still pending, named in its problem. Its runs through Dagster, on real tables:
integration/events/test_completeness.py."""

from __future__ import annotations

from backfill_platform.pipeline.archive.listing import ArchiveFile
from backfill_platform.pipeline.events.completeness import completeness
from backfill_platform.pipeline.hour_mapping import ReadPlan
from backfill_platform_tests.support.days import D2, D3, utc
from backfill_platform_tests.support.session import START


def test_a_day_settles_at_its_end_plus_lateness_plus_one_hour(playback):
    # playback: 8 h lateness, 15 min clock skew.
    plan = ReadPlan.for_partitions(playback, [START, D2])
    assert plan.partitions[D2.isoformat()].high == utc(D3, 9)
    hours = plan.required_hours(D2.isoformat())
    assert hours[0] == utc(START, 22) and hours[-1] == utc(D3, 8) and len(hours) == 35
    # Nothing was archived before the stream's first day: those hours are not required.
    assert plan.required_hours(START.isoformat())[0] == utc(START)


def test_missing_and_pending_hours_are_named(playback):
    plan = ReadPlan.for_partitions(playback, [D2, D3])
    files = [
        ArchiveFile(path="", name="", ingestion_hour=h, size=1, modified_ns=0)
        for h in plan.required_hours(D2.isoformat()) + plan.required_hours(D3.isoformat())
        if h != utc(D3, 5)
    ]
    status = completeness(playback, plan, files, now=utc(D3, 12))
    assert status[D2.isoformat()].missing_hours == [utc(D3, 5)]
    assert not status[D2.isoformat()].settled
    assert "2026-10-03 05:00 to 05:59" in status[D2.isoformat()].problem()
    # D3 is not due yet: its later hours are pending, not missing, and it says when it settles.
    d3 = status[D3.isoformat()]
    assert not d3.horizon_passed and d3.missing_hours == [utc(D3, 5)]
    assert d3.pending_hours[0] == utc(D3, 12)  # the hour 11:00 closed at noon
    assert "settles at 2026-10-04 09:00 UTC" in d3.problem()
    relaxed = playback.model_copy(update={"allow_empty_hours": True})
    one_day = ReadPlan.for_partitions(relaxed, [D2])
    assert completeness(relaxed, one_day, files, now=utc(D3, 12))[D2.isoformat()].settled
