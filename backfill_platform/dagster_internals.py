"""Every private Dagster API the package uses, each with why no public one does the job.

Checked against dagster 1.13.x (1.13.27): none of these names is exported by `dagster`,
`dagster.components` or `dagster.preview`. The rest of the package imports them from here only
(`test_layout.py` holds it), so an upgrade that moves one breaks this module alone, and the
reason beside it says what a public replacement would have to do.
"""

from __future__ import annotations

# AssetCheckEvaluationTargetMaterializationData: the materialization a partition's check evaluation
# judges. The public `AssetCheckEvaluation` takes it as `target_materialization_data`; without it a
# passed day of a range run shows as "missing" in the UI (`AssetCheckResult` sets it only for a single
# partition). Used by `pipeline/validation/verdicts.py`.
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationTargetMaterializationData,
)

# DATA_VERSION_TAG (`dagster/data_version`): the events step records what each day read as an
# `AssetObservation` of the events asset, whose constructor takes tags but no data version (only an
# observable asset's `ObserveResult` does); the daily refresh reads it back in one query because Dagster
# indexes this tag per partition (`pipeline/events/read_record.py`, `orchestration/automation/
# read_versions.py`).
from dagster._core.definitions.data_version import DATA_VERSION_TAG

# UpstreamPartitionsResult, the three PartitionsSubset classes and DynamicPartitionsStore: the protocol
# of a custom `PartitionMapping` (public, and meant to be subclassed). It returns an
# `UpstreamPartitionsResult` and is handed `PartitionsSubset`s, which it can read as time windows
# (rather than key by key, thousands of hours) only through their concrete classes; the dynamic
# partitions store is in its signature. `pipeline/hour_mapping.py` maps a day to the hours it reads.
from dagster._core.definitions.partitions.mapping.partition_mapping import UpstreamPartitionsResult
from dagster._core.definitions.partitions.subset.all import AllPartitionsSubset
from dagster._core.definitions.partitions.subset.partitions_subset import PartitionsSubset
from dagster._core.definitions.partitions.subset.time_window import TimeWindowPartitionsSubset

# ReconstructableRepository: `operations/` runs a backfill with the public `execute_job`, which takes a
# reconstructable job: the code location's own implicit asset job (`__ASSET_JOB`, the job of the UI's
# runs), found through the location's `defs`. The public `reconstructable` / `build_reconstructable_job`
# only rebuild a function returning a job, which Dagster wraps in an ephemeral repository where
# `__ASSET_JOB` is a reserved name (DagsterInvalidDefinitionError); a job of another name would change
# what the runs are.
from dagster._core.definitions.reconstruct import ReconstructableRepository

# EngineEventData: `DagsterEvent.engine_event` takes an engine event's metadata only in it; the
# executor's "Pool ...: waiting for run ..." event carries its pool (`orchestration/runs/executor.py`).
# RunFailureReason with RUN_FAILURE_REASON_TAG (below): why a run failed, as Dagster tags it
# (`dagster/failure_reason` = `STEP_FAILURE`, ...); `DagsterRun` and `RunRecord` have no public
# accessor for it. The daily refresh retries a crash at once and a verdict only once its inputs moved
# (`orchestration/automation/failures.py`).
from dagster._core.events import EngineEventData, RunFailureReason
from dagster._core.instance import DynamicPartitionsStore

# CheckRunHealthResult, WorkerStatus: the answer of `RunLauncher.check_run_worker_health` (a public
# method of a public class), neither exported. `orchestration/runs/launcher.py` tells run monitoring
# whether a run's worker is alive.
from dagster._core.launcher import CheckRunHealthResult, WorkerStatus

# ASSET_PARTITION_RANGE_START_TAG, ASSET_PARTITION_RANGE_END_TAG, PARTITION_NAME_TAG: the run tags that
# name a run's partitions (a range, or one), which every run the platform launches sets and every asset
# reads back (`pipeline/partitions.py`); Dagster exports no name for them.
from dagster._core.storage.tags import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
    PARTITION_NAME_TAG,
    RUN_FAILURE_REASON_TAG,
)

# _WHITELIST_MAP: Dagster's registry of the classes its snapshots may hold. The code location's snapshot
# carries a partition mapping only if it is an instance of a built-in mapping class, and writes it under
# its class's registered name; Dagster's webserver and daemon read the snapshot, never the code, and
# infer a time-window mapping for any other (which raises across time zones). `serialize_as_builtin`
# lets a subclass of a built-in mapping be written under its base class's name, so the host side reads
# the base class (`pipeline/source_window_mapping.py` `LocalDaysMapping`: `AllPartitionMapping` there).
# A public way would be a hook on `PartitionMapping` naming its host-side stand-in; there is none.
from dagster_shared.serdes.serdes import _WHITELIST_MAP


def serialize_as_builtin(subclass: type, builtin: type) -> None:
    """Write instances of `subclass` into snapshots as `builtin` (its base class, a built-in Dagster
    class): its registered serializer, which packs the base class's fields only (none of the subclass's
    attributes) under the base class's name. Idempotent."""
    if not issubclass(subclass, builtin):
        raise TypeError(f"{subclass.__name__} must subclass {builtin.__name__}")
    _WHITELIST_MAP.object_serializers[subclass.__name__] = _WHITELIST_MAP.object_serializers[builtin.__name__]


__all__ = [
    "ASSET_PARTITION_RANGE_END_TAG",
    "ASSET_PARTITION_RANGE_START_TAG",
    "DATA_VERSION_TAG",
    "PARTITION_NAME_TAG",
    "RUN_FAILURE_REASON_TAG",
    "AllPartitionsSubset",
    "AssetCheckEvaluationTargetMaterializationData",
    "CheckRunHealthResult",
    "DynamicPartitionsStore",
    "EngineEventData",
    "PartitionsSubset",
    "ReconstructableRepository",
    "RunFailureReason",
    "TimeWindowPartitionsSubset",
    "UpstreamPartitionsResult",
    "WorkerStatus",
    "serialize_as_builtin",
]
