"""Pure verdicts of a promotion (`validation/promotion_verdicts.py`). The gate's decision
(`gate_decision`, from plain ledger rows: no Spark, no catalog): a day is promotable only when its latest
validation passed its blocking checks, the shadow still holds exactly the rows validated, and the events
it read are still the ones it was computed from; every other day is held back with a reason naming what
failed, and which source changed when the day read several (`changed_in`). After the commit, the buckets
where production differs from the shadow (`compare_buckets`) fail their day's `promotion_verified`
verdict (`verified_verdicts`)."""

from __future__ import annotations

import pytest

from backfill_platform.pipeline.promotion.checks import PROMOTION_VERIFIED
from backfill_platform.pipeline.validation.buckets import BucketFigures
from backfill_platform.pipeline.validation.fingerprints import Fingerprint
from backfill_platform.pipeline.validation.partition_inputs import PartitionInputs
from backfill_platform.pipeline.validation.promotion_verdicts import (
    GateDecision,
    compare_buckets,
    gate_decision,
    verified_verdicts,
)

DAY, OTHER = "2026-10-01", "2026-10-02"
SHADOW = Fingerprint(120, "987654321987654321987")  # more than 64 bits: the ledger keeps it as text
EVENTS = Fingerprint(4000, "123456789")


def validation(
    run_id: str = "run-1",
    shadow: Fingerprint = SHADOW,
    events: Fingerprint = EVENTS,
    passed: bool = True,
    failed_checks: str = "",
    inputs: str | None = None,
) -> dict:
    """A ledger row of a shadow validation, as `latest_shadow_rows` returns it."""
    return {
        "run_id": run_id,
        "checks_passed": passed,
        "failed_checks": failed_checks,
        **shadow.columns("shadow"),
        **events.columns("events"),
        "inputs": inputs,
    }


@pytest.fixture
def ledger() -> dict[str, dict]:
    """The latest validation per day, as `promotion.gate` reads it from the ledger."""
    return {}


def judge(
    ledger: dict[str, dict],
    days: list[str],
    shadow: dict[str, Fingerprint] | None = None,
    inputs: dict[str, PartitionInputs] | None = None,
) -> tuple[dict[str, dict], dict[str, str]]:
    shadow = shadow or dict.fromkeys(days, SHADOW)
    inputs = inputs or {day: PartitionInputs({"playback": EVENTS}) for day in days}
    decision = gate_decision(ledger, "v2", shadow, days, inputs)
    assert isinstance(decision, GateDecision)
    return decision.promotable, decision.held_back


def test_a_day_validated_and_unchanged_since_is_promotable(ledger: dict[str, dict]) -> None:
    ledger[DAY] = validation()
    passed, problems = judge(ledger, [DAY])
    assert passed == {DAY: ledger[DAY]}
    assert problems == {}


def test_a_day_never_validated_is_held_back(ledger: dict[str, dict]) -> None:
    ledger[DAY] = validation()
    passed, problems = judge(ledger, [DAY, OTHER])
    assert list(passed) == [DAY]
    assert problems == {OTHER: "the checks of shadow v2 never ran"}


def test_a_day_whose_blocking_checks_failed_is_held_back_naming_them_and_the_run(
    ledger: dict[str, dict],
) -> None:
    ledger[DAY] = validation(run_id="run-7", passed=False, failed_checks="row_counts_per_bucket")
    passed, problems = judge(ledger, [DAY])
    assert passed == {}
    assert problems == {DAY: "blocking checks failed (row_counts_per_bucket) in run run-7"}


@pytest.mark.parametrize(
    "now",
    [
        Fingerprint(SHADOW.rows, "987654321987654321988"),  # same count, other rows
        Fingerprint(SHADOW.rows + 1, SHADOW.row_hash),  # a row more, hash sum alike
        Fingerprint.EMPTY,  # emptied since
    ],
)
def test_a_shadow_changed_after_its_validation_is_held_back(
    ledger: dict[str, dict], now: Fingerprint
) -> None:
    ledger[DAY] = validation(run_id="run-3")
    passed, problems = judge(ledger, [DAY], shadow={DAY: now})
    assert passed == {}
    assert problems == {DAY: "the shadow changed after its validation in run run-3"}


def test_an_empty_shadow_validated_empty_is_promotable(ledger: dict[str, dict]) -> None:
    ledger[DAY] = validation(shadow=Fingerprint.EMPTY, events=Fingerprint.EMPTY)
    passed, problems = judge(
        ledger,
        [DAY],
        shadow={DAY: Fingerprint.EMPTY},
        inputs={DAY: PartitionInputs({"playback": Fingerprint.EMPTY})},
    )
    assert list(passed) == [DAY] and problems == {}


def test_a_validation_from_before_the_shadow_fingerprint_was_recorded_is_not_trusted(
    ledger: dict[str, dict],
) -> None:
    old = validation(run_id="run-0")
    old["shadow_rows"] = old["shadow_row_hash"] = None
    ledger[DAY] = old
    passed, problems = judge(ledger, [DAY])
    assert passed == {}
    assert problems == {DAY: "the shadow changed after its validation in run run-0"}


def test_a_day_whose_events_were_re_derived_is_stale_however_good_its_verdicts(
    ledger: dict[str, dict],
) -> None:
    ledger[DAY] = validation(run_id="run-4")
    passed, problems = judge(
        ledger, [DAY], inputs={DAY: PartitionInputs({"playback": Fingerprint(4000, "123456780")})}
    )
    assert passed == {}
    # One source: the message names none.
    assert problems == {
        DAY: "the events changed since shadow v2 was validated in run run-4 (re-derived from the archive); "
        "re-materialize shadow v2 for this day"
    }


def test_a_one_source_day_names_no_source_even_with_its_inputs_recorded(ledger: dict[str, dict]) -> None:
    then = PartitionInputs({"playback": EVENTS})
    ledger[DAY] = validation(run_id="run-4", inputs=then.text())
    _, problems = judge(ledger, [DAY], inputs={DAY: PartitionInputs({"playback": Fingerprint(3999, "1")})})
    assert problems[DAY].startswith("the events changed since shadow v2 was validated in run run-4")


def test_a_join_names_the_source_whose_events_changed(ledger: dict[str, dict]) -> None:
    then = PartitionInputs({"playback": EVENTS, "impressions": Fingerprint(10, "55")})
    now = PartitionInputs({"playback": EVENTS, "impressions": Fingerprint(11, "56")})
    ledger[DAY] = validation(run_id="run-5", events=then.total, inputs=then.text())
    passed, problems = judge(ledger, [DAY], inputs={DAY: now})
    assert passed == {}
    assert problems[DAY].startswith(
        "the events of impressions changed since shadow v2 was validated in run run-5"
    )


def test_a_join_whose_validation_did_not_record_its_inputs_names_no_source(ledger: dict[str, dict]) -> None:
    then = PartitionInputs({"playback": EVENTS, "impressions": Fingerprint(10, "55")})
    now = PartitionInputs({"playback": Fingerprint(4001, "1"), "impressions": Fingerprint(10, "55")})
    ledger[DAY] = validation(run_id="run-6", events=then.total, inputs=None)
    _, problems = judge(ledger, [DAY], inputs={DAY: now})
    assert problems[DAY].startswith("the events changed since shadow v2 was validated in run run-6")


def test_each_day_is_judged_on_its_own_and_lands_on_exactly_one_side(ledger: dict[str, dict]) -> None:
    third = "2026-10-03"
    ledger[DAY] = validation(run_id="ok")
    ledger[third] = validation(run_id="bad", passed=False, failed_checks="checksums_per_bucket")
    passed, problems = judge(ledger, [DAY, OTHER, third])
    assert set(passed) == {DAY}
    assert set(problems) == {OTHER, third}
    assert "checksums_per_bucket" in problems[third] and "never ran" in problems[OTHER]


def test_a_join_whose_recorded_sources_all_match_names_no_source_rather_than_none() -> None:
    # The validation recorded a total other than its sources' sum: no source is to blame by name, and
    # the reason reads "the events changed", never "the events of  changed".
    now = PartitionInputs({"playback": EVENTS, "impressions": Fingerprint(10, "55")})
    ledger = {DAY: validation(run_id="run-8", events=Fingerprint(1, "1"), inputs=now.text())}
    _, problems = judge(ledger, [DAY], inputs={DAY: now})
    assert problems[DAY].startswith("the events changed since shadow v2 was validated in run run-8")


# compare_buckets and verified_verdicts


def figures(rows: int, row_hash: str = "7", key_hash: str = "3", views: int = 1) -> BucketFigures:
    return BucketFigures(
        rows=rows, distinct_keys=rows, sums={"views": views}, key_hash=key_hash, row_hash=row_hash
    )


def test_buckets_alike_in_production_and_the_shadow_do_not_differ() -> None:
    shadow = {(DAY, 0): figures(2), (DAY, 1): figures(3)}
    assert compare_buckets(shadow, {(DAY, 0): figures(2), (DAY, 1): figures(3)}) == {}
    assert compare_buckets({}, {}) == {}


@pytest.mark.parametrize(
    "production",
    [figures(3), figures(2, row_hash="8"), figures(2, key_hash="4"), figures(2, views=2)],
    ids=["rows", "row-hash", "key-hash", "sums"],
)
def test_a_bucket_differs_in_any_of_rows_sums_or_hash_sums(production: BucketFigures) -> None:
    differing = compare_buckets({(DAY, 5): figures(2)}, {(DAY, 5): production})
    assert differing == {
        (DAY, 5): f"production {production.rows} rows, the shadow 2; row hash {production.row_hash} in "
        "production, 7 in the shadow"
    }


def test_a_bucket_on_one_side_only_differs() -> None:
    assert compare_buckets({(DAY, 0): figures(2)}, {}) == {
        (DAY, 0): "production 0 rows, the shadow 2; row hash 0 in production, 7 in the shadow"
    }
    assert list(compare_buckets({}, {(OTHER, None): figures(1)})) == [(OTHER, None)]


def test_each_promoted_day_is_verified_by_its_own_buckets() -> None:
    mismatched = {(DAY, 3): "production 1 rows, the shadow 2; …", (DAY, 9): "production 0 rows, …"}
    verdicts = verified_verdicts(PROMOTION_VERIFIED, [DAY, OTHER], mismatched)
    assert [(v.check, v.partition, v.passed, v.blocking) for v in verdicts] == [
        (PROMOTION_VERIFIED, DAY, False, True),
        (PROMOTION_VERIFIED, OTHER, True, True),
    ]
    bad, good = verdicts
    assert bad.metadata["buckets_differing"] == 2 and good.metadata["buckets_differing"] == 0
    assert [list(r.data.values()) for r in bad.metadata["differences"].records] == [
        [3, "production 1 rows, the shadow 2; …"],
        [9, "production 0 rows, …"],
    ]
    assert [c.name for c in bad.metadata["differences"].schema.columns] == ["hour", "difference"]
    assert good.metadata["differences"].records == []


def test_no_promoted_day_no_verdict() -> None:
    assert verified_verdicts(PROMOTION_VERIFIED, [], {(DAY, 0): "differs"}) == []
