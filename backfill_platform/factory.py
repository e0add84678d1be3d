"""Build every asset, check and job from the specs: nothing is written per stream or dataset by hand."""

from __future__ import annotations

from dagster import Definitions

from backfill_platform.archive.assets import build_archive_asset
from backfill_platform.automation.sensor import automation_sensor
from backfill_platform.events.assets import build_events_asset
from backfill_platform.lakehouse.resources import catalog_from_env, spark_from_env
from backfill_platform.promotion.assets import build_production_asset
from backfill_platform.promotion.jobs import revert_promotion_job
from backfill_platform.runs.executor import fenced_in_process_executor
from backfill_platform.shadow.assets import build_shadow_asset
from backfill_platform.specs.loader import SpecSet, load_specs


def build_definitions(specs: SpecSet | None = None) -> Definitions:
    specs = specs if specs is not None else load_specs()
    assets = []
    for stream in specs.streams.values():
        assets += [build_archive_asset(stream), build_events_asset(stream)]
    for dataset in specs.datasets.values():
        stream = specs.streams[dataset.source_stream]
        assets += [build_shadow_asset(dataset, stream, version) for version in dataset.versions]
        assets.append(build_production_asset(dataset, stream))
    catalog = catalog_from_env()
    return Definitions(
        assets=assets,
        jobs=[revert_promotion_job],
        sensors=[automation_sensor()],
        resources={"catalog": catalog, "spark": spark_from_env(catalog)},
        # Spark steps share the run's session: one JVM per run, not one per step. The executor also
        # records the run's worker and fences writers (backfill_platform/runs/executor.py).
        executor=fenced_in_process_executor(catalog.jdbc_uri),
    )
