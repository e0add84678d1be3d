"""What per-day verdicts conclude (`pipeline/validation/verdicts.py`, `shadow_validation.py`): a day is held back
by the blocking checks it failed (a failed warning, or a passed check, holds nothing back); the digest
recorded on the promotion snapshot changes with any verdict or number but not with the order the checks
reported in; and each verdict becomes an evaluation of its day, only for the checks the run selected,
blocking only under all-or-nothing, judging that day's materialization."""

from __future__ import annotations

from dagster import AssetCheckSeverity, AssetKey, MetadataValue

from backfill_platform.dagster_internals import AssetCheckEvaluationTargetMaterializationData
from backfill_platform.pipeline.validation.shadow_validation import ShadowValidation
from backfill_platform.pipeline.validation.verdicts import (
    PartitionVerdict,
    check_evaluations,
    digest,
    failed_partitions,
)

DAY1, DAY2, DAY3 = "2026-10-01", "2026-10-02", "2026-10-03"
KEY = AssetKey(["shadow", "clicks_daily"])


def test_a_verdict_blocks_by_default_and_carries_no_numbers_unless_given() -> None:
    verdict = PartitionVerdict("rows", DAY1, passed=False)
    assert verdict.blocking is True
    assert verdict.metadata == {}
    assert PartitionVerdict("rows", DAY1, False, {"rows": 3}, blocking=False).blocking is False


def test_a_day_is_held_back_by_the_blocking_checks_it_failed_in_order() -> None:
    verdicts = [
        PartitionVerdict("rows", DAY1, passed=False),
        PartitionVerdict("rows", DAY2, passed=True),
        PartitionVerdict("schema", DAY1, passed=False),
        PartitionVerdict("divergence", DAY3, passed=False),
    ]
    assert failed_partitions(verdicts) == {DAY1: ["rows", "schema"], DAY3: ["divergence"]}


def test_a_failed_warning_or_a_passed_check_holds_no_day_back() -> None:
    verdicts = [
        PartitionVerdict("divergence", DAY1, passed=False, blocking=False),
        PartitionVerdict("rows", DAY1, passed=True),
        PartitionVerdict("rows", DAY2, passed=True, blocking=False),
    ]
    assert failed_partitions(verdicts) == {}
    assert failed_partitions([]) == {}
    # The same check failed as blocking does hold its day back.
    assert failed_partitions([PartitionVerdict("divergence", DAY1, passed=False)]) == {DAY1: ["divergence"]}


def test_failed_days_reads_any_iterable_once() -> None:
    verdicts = (PartitionVerdict("rows", day, passed=False) for day in (DAY2, DAY1))
    assert failed_partitions(verdicts) == {DAY2: ["rows"], DAY1: ["rows"]}


def _verdicts() -> list[PartitionVerdict]:
    return [
        PartitionVerdict("rows", DAY1, True, {"rows": 10, "expected": 10}),
        PartitionVerdict("rows", DAY2, False, {"rows": 9, "expected": 10}),
        PartitionVerdict("divergence", DAY1, True, {"ratio": MetadataValue.float(0.0)}, blocking=False),
    ]


def test_the_digest_is_short_hex_and_the_same_for_the_same_verdicts_in_any_order() -> None:
    verdicts = _verdicts()
    value = digest(verdicts)
    assert len(value) == 16 and int(value, 16) >= 0
    assert digest(list(reversed(verdicts))) == value
    assert digest([verdicts[1], verdicts[2], verdicts[0]]) == value
    assert digest(iter(verdicts)) == value
    # The order of a verdict's numbers does not matter either.
    reordered = PartitionVerdict("rows", DAY1, True, {"expected": 10, "rows": 10})
    assert digest([reordered, *verdicts[1:]]) == value


def test_the_digest_changes_with_any_verdict_or_number() -> None:
    verdicts = _verdicts()
    value = digest(verdicts)
    changed = [
        [PartitionVerdict("rows", DAY1, True, {"rows": 11, "expected": 10}), *verdicts[1:]],  # a number
        [PartitionVerdict("rows", DAY1, False, {"rows": 10, "expected": 10}), *verdicts[1:]],  # the outcome
        [PartitionVerdict("rows", DAY3, True, {"rows": 10, "expected": 10}), *verdicts[1:]],  # the day
        [PartitionVerdict("count", DAY1, True, {"rows": 10, "expected": 10}), *verdicts[1:]],  # the check
        [PartitionVerdict("rows", DAY1, True, {"rows": 10}), *verdicts[1:]],  # a number left out
        verdicts[1:],  # a verdict left out
        [*verdicts, PartitionVerdict("schema", DAY1, True)],  # one more
    ]
    digests = [digest(other) for other in changed]
    assert value not in digests
    assert len(set(digests)) == len(digests)
    assert digest([]) != value


def test_the_digest_reads_a_metadata_value_as_the_value_it_holds() -> None:
    plain = [PartitionVerdict("divergence", DAY1, True, {"ratio": 0.25, "note": "none"})]
    wrapped = [
        PartitionVerdict(
            "divergence", DAY1, True, {"ratio": MetadataValue.float(0.25), "note": MetadataValue.text("none")}
        )
    ]
    assert digest(wrapped) == digest(plain)
    assert digest(
        [PartitionVerdict("divergence", DAY1, True, {"ratio": MetadataValue.float(0.5)})]
    ) != digest([PartitionVerdict("divergence", DAY1, True, {"ratio": MetadataValue.float(0.25)})])


def _target(storage_id: int) -> AssetCheckEvaluationTargetMaterializationData:
    return AssetCheckEvaluationTargetMaterializationData(storage_id=storage_id, run_id="run-1", timestamp=1.0)


def test_each_selected_verdict_is_an_evaluation_of_its_day_judging_its_materialization() -> None:
    verdicts = [
        PartitionVerdict("rows", DAY1, True, {"rows": 10}),
        PartitionVerdict("rows", DAY2, False, {"rows": 9}),
        PartitionVerdict("divergence", DAY1, False, blocking=False),
    ]
    targets = {DAY1: _target(5)}
    evaluations = list(check_evaluations(KEY, verdicts, {"rows", "divergence"}, False, targets))
    assert [(e.check_name, e.partition, e.passed) for e in evaluations] == [
        ("rows", DAY1, True),
        ("rows", DAY2, False),
        ("divergence", DAY1, False),
    ]
    assert all(e.asset_key == KEY for e in evaluations)
    assert [e.target_materialization_data for e in evaluations] == [_target(5), None, _target(5)]
    assert evaluations[0].metadata == {"rows": MetadataValue.int(10)}
    assert evaluations[2].metadata == {}


def test_a_blocking_verdict_blocks_under_all_or_nothing_only_and_a_warning_never() -> None:
    verdicts = [
        PartitionVerdict("rows", DAY1, False),
        PartitionVerdict("divergence", DAY1, False, blocking=False),
    ]
    all_or_nothing = list(check_evaluations(KEY, verdicts, {"rows", "divergence"}, False, {}))
    per_day = list(check_evaluations(KEY, verdicts, {"rows", "divergence"}, True, {}))
    assert [(e.severity, e.blocking) for e in all_or_nothing] == [
        (AssetCheckSeverity.ERROR, True),
        (AssetCheckSeverity.WARN, False),
    ]
    # Per day: the severity still says which failure holds the day back; the step does not fail.
    assert [(e.severity, e.blocking) for e in per_day] == [
        (AssetCheckSeverity.ERROR, False),
        (AssetCheckSeverity.WARN, False),
    ]


def test_a_check_the_run_did_not_select_reports_nothing() -> None:
    verdicts = [PartitionVerdict("rows", DAY1, False), PartitionVerdict("divergence", DAY1, True)]
    assert [e.check_name for e in check_evaluations(KEY, verdicts, {"divergence"}, False, {})] == [
        "divergence"
    ]
    assert list(check_evaluations(KEY, verdicts, set(), False, {})) == []


def test_a_shadow_validation_passes_a_day_unless_a_blocking_check_failed_it() -> None:
    validation = ShadowValidation(
        days=[DAY1, DAY2, DAY3],
        verdicts=[
            PartitionVerdict("rows", DAY1, True),
            PartitionVerdict("rows", DAY2, False),
            PartitionVerdict("divergence", DAY3, False, blocking=False),
        ],
    )
    assert validation.failed == {DAY2: ["rows"]}
    assert [validation.passed(day) for day in validation.days] == [True, False, True]
    assert validation.digest == digest(validation.verdicts)
    assert ShadowValidation(days=[DAY1]).failed == {}
    assert ShadowValidation(days=[DAY1]).passed(DAY1)


def test_two_verdicts_of_one_check_and_day_have_one_digest_in_any_order() -> None:
    first = PartitionVerdict("rows", DAY1, True, {"rows": 3})
    second = PartitionVerdict("rows", DAY1, True, {"rows": 4})
    assert digest([first, second]) == digest([second, first])
    assert digest([first, second]) != digest([first, first])


def test_the_digest_tells_a_warning_from_a_blocking_verdict() -> None:
    blocking = [PartitionVerdict("divergence", DAY1, False, {"ratio": 0.5})]
    warning = [PartitionVerdict("divergence", DAY1, False, {"ratio": 0.5}, blocking=False)]
    assert digest(blocking) != digest(warning)
    # A blocking verdict's digest is the one recorded before warnings were told apart.
    assert digest(blocking) == "03c4029a159fb2f2"
