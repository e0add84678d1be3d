"""What a dataset day read, per source (`validation/partition_inputs.py` `PartitionInputs`): its total is the exact sum
of its sources', its text form (the ledger's `inputs` column) reads back exactly in source order, and a
comparison names each source whose share changed, appeared or disappeared."""

from __future__ import annotations

from backfill_platform.pipeline.validation.fingerprints import Fingerprint
from backfill_platform.pipeline.validation.partition_inputs import PartitionInputs

PLAYBACK, IMPRESSIONS = Fingerprint(1200, "-44"), Fingerprint(340, "99")


def test_the_total_is_the_sum_of_the_sources() -> None:
    assert PartitionInputs({"playback": PLAYBACK, "impressions": IMPRESSIONS}).total == Fingerprint(
        1540, "55"
    )
    assert PartitionInputs({}).total == Fingerprint.EMPTY


def test_the_text_names_each_source_in_order_and_reads_back() -> None:
    inputs = PartitionInputs({"playback": PLAYBACK, "impressions": IMPRESSIONS})
    assert inputs.text() == "impressions=340/99;playback=1200/-44"
    assert PartitionInputs.parse(inputs.text()) == inputs


def test_no_text_is_no_inputs_recorded() -> None:
    assert PartitionInputs.parse(None) is None
    assert PartitionInputs.parse("") is None


def test_the_sources_whose_share_changed_are_named() -> None:
    then = PartitionInputs({"playback": PLAYBACK, "impressions": IMPRESSIONS})
    assert then.changed_sources(then) == []
    assert then.changed_sources(
        PartitionInputs({"playback": PLAYBACK, "impressions": Fingerprint(341, "99")})
    ) == ["impressions"]
    assert then.changed_sources(PartitionInputs({"playback": PLAYBACK})) == ["impressions"]
    assert PartitionInputs({"playback": PLAYBACK}).changed_sources(then) == ["impressions"]
