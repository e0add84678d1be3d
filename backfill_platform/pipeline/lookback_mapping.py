"""The partition mapping of a source with a lookback: dataset day D reads the source's days D-n..D.

Inside the code location (runs, `evaluate_automation_conditions`, the daily refresh's automation sensor,
which runs in the user code server) this mapping is exactly `TimeWindowPartitionMapping(start_offset=-n)`:
the refresh waits for every source day a dataset day reads, and re-derives day D+1 when a late file
changes the tail of source day D that D+1's lookback reads.

Outside it, on purpose, it is the same-day mapping. Dagster 1.13 leaves a mapping that is not one of its
built-in classes out of the code location's snapshot, and the webserver and daemon infer the default
there (day D ↔ day D). An asset backfill launched from the UI, over GraphQL or with `backfill
--instance` computes its target from that graph: the days the user selected, and downstream only the
same days. With the built-in mapping it also targeted day D+1 of the dataset (source day D is read by
D and D+1): the day after the range, often not settled (today, on a live system), failed its
`events_validated` check and turned a backfill whose selected days all succeeded into COMPLETED_FAILED.
Dagster's asset backfill has no third outcome for a targeted partition (a run that succeeds without
materializing one is marked failed as stalled), so such a day is kept out of the target instead; the
daily refresh requests it once it settles. A day the user selects is targeted and judged as always.
"""

from __future__ import annotations

from dataclasses import dataclass

from dagster import PartitionMapping, TimeWindowPartitionMapping

from backfill_platform.pipeline.delegating_mapping import DelegatingMapping


@dataclass(frozen=True)
class LookbackMapping(DelegatingMapping, PartitionMapping):
    """Dataset day D ← source days D-`days_back` … D (days before the source's first one are left out)."""

    days_back: int

    @property
    def delegate(self) -> TimeWindowPartitionMapping:
        return TimeWindowPartitionMapping(
            start_offset=-self.days_back, end_offset=0, allow_nonexistent_upstream_partitions=True
        )

    @property
    def description(self) -> str:
        return (
            f"Lookback: dataset day D reads source days D-{self.days_back} to D. Asset backfills "
            "(UI, GraphQL) target the selected days only; the daily refresh follows the lookback."
        )
