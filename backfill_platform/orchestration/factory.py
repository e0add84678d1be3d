"""Build every asset, check and job from the specs: nothing is written per stream or dataset by hand.

The builders of the `Stream`, `Dataset` and `Lakehouse` components: each component instance of a
project's defs folder builds its own assets here, and the Lakehouse what they all run on. Definitions
are only ever loaded from a project (`components/registry.project_definitions`).
"""

from __future__ import annotations

from collections.abc import Mapping

from dagster import AssetsDefinition, Definitions

from backfill_platform.lakehouse.resources import catalog_from_env, spark_from_env
from backfill_platform.orchestration.automation.conditions import (
    archive_observation_condition,
    events_condition,
    production_condition,
    shadow_condition,
)
from backfill_platform.orchestration.automation.sensor import automation_sensor
from backfill_platform.orchestration.runs.executor import fenced_in_process_executor
from backfill_platform.pipeline.archive.assets import build_archive_asset
from backfill_platform.pipeline.events.assets import build_events_asset
from backfill_platform.pipeline.kafka_cluster import KafkaResource
from backfill_platform.pipeline.names import archive_key
from backfill_platform.pipeline.promotion.assets import build_production_asset
from backfill_platform.pipeline.promotion.jobs import revert_promotion_job
from backfill_platform.pipeline.replay.job import replay_to_kafka_job, replay_to_kinesis_job
from backfill_platform.pipeline.replay.kinesis import KinesisResource
from backfill_platform.pipeline.shadow.assets import build_shadow_asset
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.spec_set import SpecSet, check_isolation
from backfill_platform.specs.stream import StreamSpec


def platform_definitions(specs: SpecSet) -> Definitions:
    """What every stream and dataset runs on: resources of the current tier, executor, sensor, jobs.

    `specs`: every stream and dataset of the code location, the `specs` resource of its jobs (revert and
    replay look theirs up by name)."""
    # No stream's replay target is another's live one, however the set was put together.
    check_isolation(specs.streams)
    catalog = catalog_from_env()
    return Definitions(
        jobs=[revert_promotion_job, replay_to_kinesis_job, replay_to_kafka_job],
        sensors=[automation_sensor()],
        resources={
            "catalog": catalog,
            "spark": spark_from_env(catalog),
            "specs": specs,
            # The replay jobs' targets (their settings through the environment, see their resources).
            "kinesis": KinesisResource(),
            "kafka": KafkaResource(),
        },
        # Spark steps share the run's session: one JVM per run, not one per step. The executor also
        # records the run's worker and fences writers (backfill_platform/orchestration/runs/executor.py).
        executor=fenced_in_process_executor(catalog.jdbc_uri),
    )


def stream_assets(stream: StreamSpec) -> list[AssetsDefinition]:
    """A stream's observable archive and events table, with the daily refresh's conditions."""
    return [
        build_archive_asset(stream, archive_observation_condition(stream)),
        build_events_asset(stream, events_condition(stream, archive_key(stream))),
    ]


def dataset_assets(dataset: DatasetSpec, streams: Mapping[str, StreamSpec]) -> list[AssetsDefinition]:
    """A dataset's shadows (the refresh derives the active one only) and production table; `streams`
    holds its sources by name."""
    active = dataset.active_version
    sources = [streams[name] for name in dataset.stream_names]
    assets = [
        build_shadow_asset(
            dataset, sources, version, shadow_condition(sources) if version == active else None
        )
        for version in dataset.versions
    ]
    assets.append(build_production_asset(dataset, sources, production_condition(sources)))
    return assets
