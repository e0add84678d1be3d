"""The automation conditions evaluated tick by tick without a daemon: runs simulated by reported events.

`Ticks` carries an ephemeral instance and the evaluation cursor from one tick to the next, as the daemon
does; a test reports what a run of some days would (materializations, blocking-check verdicts, archive
observations) and asks which partitions the next tick requests. No Spark, no run.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, timedelta

from dagster import (
    AssetCheckEvaluation,
    AssetKey,
    AssetMaterialization,
    AssetObservation,
    AssetRecordsFilter,
    DagsterInstance,
    Definitions,
    evaluate_automation_conditions,
)
from dagster._core.definitions.data_version import DATA_VERSION_TAG

from backfill_platform.dagster_internals import AssetCheckEvaluationTargetMaterializationData


def day_keys(first: str, last: str) -> list[str]:
    """The daily partition keys from `first` to `last`, both included."""
    start, end = date.fromisoformat(first), date.fromisoformat(last)
    return [(start + timedelta(days=i)).isoformat() for i in range((end - start).days + 1)]


class Ticks:
    """An ephemeral instance and the cursor carried from one evaluation to the next; `watched`: the assets
    whose requests a tick returns."""

    def __init__(self, definitions: Definitions, watched: Sequence[AssetKey]):
        self.definitions = definitions
        self.watched = tuple(watched)
        self.graph = definitions.resolve_asset_graph()
        self.instance = DagsterInstance.ephemeral()
        self.cursor = None

    def at(self, when: datetime) -> dict[AssetKey, set[str]]:
        """One evaluation at `when`: the partitions it requests of each watched asset (those it requests)."""
        result = evaluate_automation_conditions(
            defs=self.definitions, instance=self.instance, cursor=self.cursor, evaluation_time=when
        )
        self.cursor = result.cursor
        return {
            key: set(result.get_requested_partitions(key))
            for key in self.watched
            if result.get_num_requested(key)
        }

    def materialize(
        self, key: AssetKey, days: list[str], checks_pass: bool | None = True, failed_days_kept: bool = True
    ) -> None:
        """What a run of `days` reports: each day's materialization, then its blocking-check verdicts.

        checks_pass None: no verdicts at all. False: `reconciliation` fails (the others pass), and the
        day is still materialized if `failed_days_kept` (the `per_day` policy), otherwise not (the default
        all-or-nothing policy holds failed days back). Runless events: one verdict per check and day.
        """
        checks = [
            (check, self.graph.get_check_spec(check).partitions_def is not None)
            for check in sorted(k for k in self.graph.asset_check_keys if k.asset_key == key)
            if self.graph.get_check_spec(check).blocking
        ]
        for day in days:
            if checks_pass is not False or failed_days_kept:
                self.instance.report_runless_asset_event(AssetMaterialization(asset_key=key, partition=day))
            if checks_pass is None:
                continue
            latest = self.instance.fetch_materializations(
                AssetRecordsFilter(asset_key=key, asset_partitions=[day]), limit=1
            ).records
            # A check judges the materialization it ran after (what a real run records).
            target = (
                AssetCheckEvaluationTargetMaterializationData(
                    storage_id=latest[0].storage_id, run_id=latest[0].run_id, timestamp=latest[0].timestamp
                )
                if latest
                else None
            )
            for check, partitioned in checks:
                self.instance.report_runless_asset_event(
                    AssetCheckEvaluation(
                        asset_key=key,
                        check_name=check.name,
                        passed=checks_pass or check.name != "reconciliation",
                        partition=day if partitioned else None,
                        target_materialization_data=target,
                    )
                )

    def observe(self, archive: AssetKey, hour: str, version: str) -> None:
        """An observation of the archive asset `archive`'s ingestion hour `hour` with data version `version`
        (a new version: a file added to or replaced in that hour)."""
        self.instance.report_runless_asset_event(
            AssetObservation(asset_key=archive, partition=hour, tags={DATA_VERSION_TAG: version})
        )
