"""Build every asset, check and job from the specs: nothing is written per stream or dataset by hand."""

from __future__ import annotations

from dagster import Definitions, in_process_executor

from backfill_platform.archive.assets import build_archive_asset
from backfill_platform.events.assets import build_events_asset
from backfill_platform.lakehouse.resources import catalog_from_env, spark_from_env
from backfill_platform.specs.loader import SpecSet, load_specs


def build_definitions(specs: SpecSet | None = None) -> Definitions:
    specs = specs if specs is not None else load_specs()
    assets = []
    for stream in specs.streams.values():
        assets += [build_archive_asset(stream), build_events_asset(stream)]
    catalog = catalog_from_env()
    return Definitions(
        assets=assets,
        resources={"catalog": catalog, "spark": spark_from_env(catalog)},
        # Spark steps share the run's session: one JVM per run, not one per step.
        executor=in_process_executor,
    )
