"""The promotion gate's refusal (`promotion/gate.py` `refusal`) names each held-back day and its reason. The
gate's decision itself is pure and tested with `validation/promotion_verdicts.py`; its ledger read runs in
the integration tests."""

from __future__ import annotations

from backfill_platform.components.registry import demo_spec_data
from backfill_platform.pipeline.promotion.gate import PromotionRefused, refusal
from backfill_platform.specs.dataset import DatasetSpec

SPEC = DatasetSpec.model_validate(demo_spec_data("views_per_title"))
DAY, OTHER = "2026-10-01", "2026-10-02"


def test_the_refusal_names_every_held_back_day_and_its_reason_in_day_order() -> None:
    refused = refusal(
        SPEC, "v2", {OTHER: "the checks of shadow v2 never ran", DAY: "blocking checks failed (x)"}
    )
    assert isinstance(refused, PromotionRefused)
    assert str(refused) == (
        "refusing to promote views_per_title v2: 2026-10-01: blocking checks failed (x); "
        "2026-10-02: the checks of shadow v2 never ran. Production is unchanged."
    )
