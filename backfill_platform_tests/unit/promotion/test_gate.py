"""The promotion gate (`promotion.gate`): a day is promotable only when its latest validation passed its
blocking checks, the shadow still holds exactly the rows validated, and the events it read are still the
ones it was computed from; every other day is held back with a reason naming what failed (`gate_problems`),
which source changed when the day read several (`_changed_in`), and the refusal names each day and its
reason (`refusal`). The ledger read is replaced by plain rows: no Spark, no catalog."""

from __future__ import annotations

import pytest

from backfill_platform.pipeline.promotion import gate
from backfill_platform.pipeline.promotion.gate import PromotionRefused, gate_problems, refusal
from backfill_platform.pipeline.validation.checksums import Fingerprint
from backfill_platform.pipeline.validation.day_inputs import DayInputs
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.loader import builtin_spec_data

SPEC = DatasetSpec.model_validate(builtin_spec_data("views_per_title"))
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
def ledger(monkeypatch: pytest.MonkeyPatch) -> dict[str, dict]:
    """The latest validation per day the gate reads; it must ask for this dataset, version and days."""
    rows: dict[str, dict] = {}

    def latest_shadow_rows(spark, dataset: str, version: str, days: list[str]) -> dict[str, dict]:
        assert spark is None
        assert (dataset, version) == (SPEC.name, "v2")
        return {day: rows[day] for day in days if day in rows}

    monkeypatch.setattr(gate, "latest_shadow_rows", latest_shadow_rows)
    return rows


def judge(
    days: list[str], shadow: dict[str, Fingerprint] | None = None, inputs: dict[str, DayInputs] | None = None
) -> tuple[dict[str, dict], dict[str, str]]:
    shadow = shadow or dict.fromkeys(days, SHADOW)
    inputs = inputs or {day: DayInputs({"playback": EVENTS}) for day in days}
    return gate_problems(None, SPEC, "v2", shadow, days, inputs)


def test_a_day_validated_and_unchanged_since_is_promotable(ledger: dict[str, dict]) -> None:
    ledger[DAY] = validation()
    passed, problems = judge([DAY])
    assert passed == {DAY: ledger[DAY]}
    assert problems == {}


def test_a_day_never_validated_is_held_back(ledger: dict[str, dict]) -> None:
    ledger[DAY] = validation()
    passed, problems = judge([DAY, OTHER])
    assert list(passed) == [DAY]
    assert problems == {OTHER: "the checks of shadow v2 never ran"}


def test_a_day_whose_blocking_checks_failed_is_held_back_naming_them_and_the_run(
    ledger: dict[str, dict],
) -> None:
    ledger[DAY] = validation(run_id="run-7", passed=False, failed_checks="row_counts_per_bucket")
    passed, problems = judge([DAY])
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
    passed, problems = judge([DAY], shadow={DAY: now})
    assert passed == {}
    assert problems == {DAY: "the shadow changed after its validation in run run-3"}


def test_an_empty_shadow_validated_empty_is_promotable(ledger: dict[str, dict]) -> None:
    ledger[DAY] = validation(shadow=Fingerprint.EMPTY, events=Fingerprint.EMPTY)
    passed, problems = judge(
        [DAY], shadow={DAY: Fingerprint.EMPTY}, inputs={DAY: DayInputs({"playback": Fingerprint.EMPTY})}
    )
    assert list(passed) == [DAY] and problems == {}


def test_a_validation_from_before_the_shadow_fingerprint_was_recorded_is_not_trusted(
    ledger: dict[str, dict],
) -> None:
    old = validation(run_id="run-0")
    old["shadow_rows"] = old["shadow_row_hash"] = None
    ledger[DAY] = old
    passed, problems = judge([DAY])
    assert passed == {}
    assert problems == {DAY: "the shadow changed after its validation in run run-0"}


def test_a_day_whose_events_were_re_derived_is_stale_however_good_its_verdicts(
    ledger: dict[str, dict],
) -> None:
    ledger[DAY] = validation(run_id="run-4")
    passed, problems = judge([DAY], inputs={DAY: DayInputs({"playback": Fingerprint(4000, "123456780")})})
    assert passed == {}
    # One source: the message names none.
    assert problems == {
        DAY: "the events changed since shadow v2 was validated in run run-4 (re-derived from the archive); "
        "re-materialize shadow v2 for this day"
    }


def test_a_one_source_day_names_no_source_even_with_its_inputs_recorded(ledger: dict[str, dict]) -> None:
    then = DayInputs({"playback": EVENTS})
    ledger[DAY] = validation(run_id="run-4", inputs=then.text())
    _, problems = judge([DAY], inputs={DAY: DayInputs({"playback": Fingerprint(3999, "1")})})
    assert problems[DAY].startswith("the events changed since shadow v2 was validated in run run-4")


def test_a_join_names_the_source_whose_events_changed(ledger: dict[str, dict]) -> None:
    then = DayInputs({"playback": EVENTS, "impressions": Fingerprint(10, "55")})
    now = DayInputs({"playback": EVENTS, "impressions": Fingerprint(11, "56")})
    ledger[DAY] = validation(run_id="run-5", events=then.total, inputs=then.text())
    passed, problems = judge([DAY], inputs={DAY: now})
    assert passed == {}
    assert problems[DAY].startswith(
        "the events of impressions changed since shadow v2 was validated in run run-5"
    )


def test_a_join_whose_validation_did_not_record_its_inputs_names_no_source(ledger: dict[str, dict]) -> None:
    then = DayInputs({"playback": EVENTS, "impressions": Fingerprint(10, "55")})
    now = DayInputs({"playback": Fingerprint(4001, "1"), "impressions": Fingerprint(10, "55")})
    ledger[DAY] = validation(run_id="run-6", events=then.total, inputs=None)
    _, problems = judge([DAY], inputs={DAY: now})
    assert problems[DAY].startswith("the events changed since shadow v2 was validated in run run-6")


def test_each_day_is_judged_on_its_own_and_lands_on_exactly_one_side(ledger: dict[str, dict]) -> None:
    third = "2026-10-03"
    ledger[DAY] = validation(run_id="ok")
    ledger[third] = validation(run_id="bad", passed=False, failed_checks="checksums_per_bucket")
    passed, problems = judge([DAY, OTHER, third])
    assert set(passed) == {DAY}
    assert set(problems) == {OTHER, third}
    assert "checksums_per_bucket" in problems[third] and "never ran" in problems[OTHER]


def test_the_refusal_names_every_held_back_day_and_its_reason_in_day_order() -> None:
    refused = refusal(
        SPEC, "v2", {OTHER: "the checks of shadow v2 never ran", DAY: "blocking checks failed (x)"}
    )
    assert isinstance(refused, PromotionRefused)
    assert str(refused) == (
        "refusing to promote views_per_title v2: 2026-10-01: blocking checks failed (x); "
        "2026-10-02: the checks of shadow v2 never ran. Production is unchanged."
    )
