"""What a dataset day read, per source (`validation/day_inputs.py` `DayInputs`): its total is the exact sum
of its sources', its text form (the ledger's `inputs` column) reads back exactly in source order, and a
comparison names each source whose share changed, appeared or disappeared."""

from __future__ import annotations

from backfill_platform.pipeline.validation.day_inputs import DayInputs
from backfill_platform.pipeline.validation.fingerprints import Fingerprint

PLAYBACK, IMPRESSIONS = Fingerprint(1200, "-44"), Fingerprint(340, "99")


def test_the_total_is_the_sum_of_the_sources() -> None:
    assert DayInputs({"playback": PLAYBACK, "impressions": IMPRESSIONS}).total == Fingerprint(1540, "55")
    assert DayInputs({}).total == Fingerprint.EMPTY


def test_the_text_names_each_source_in_order_and_reads_back() -> None:
    inputs = DayInputs({"playback": PLAYBACK, "impressions": IMPRESSIONS})
    assert inputs.text() == "impressions=340/99;playback=1200/-44"
    assert DayInputs.parse(inputs.text()) == inputs


def test_no_text_is_no_inputs_recorded() -> None:
    assert DayInputs.parse(None) is None
    assert DayInputs.parse("") is None


def test_the_sources_whose_share_changed_are_named() -> None:
    then = DayInputs({"playback": PLAYBACK, "impressions": IMPRESSIONS})
    assert then.changed_sources(then) == []
    assert then.changed_sources(DayInputs({"playback": PLAYBACK, "impressions": Fingerprint(341, "99")})) == [
        "impressions"
    ]
    assert then.changed_sources(DayInputs({"playback": PLAYBACK})) == ["impressions"]
    assert DayInputs({"playback": PLAYBACK}).changed_sources(then) == ["impressions"]
