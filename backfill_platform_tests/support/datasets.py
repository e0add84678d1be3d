"""The demo dataset under a test's own name (its own shadow and production tables), and its runs; what a
dataset's production is named (`production`), and the platform's tables as the tests' sessions name them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from dagster import AssetCheckEvaluation, AssetKey, ExecuteInProcessResult, materialize

from backfill_platform import settings
from backfill_platform.components.registry import demo_spec_data
from backfill_platform.lakehouse.snapshots import current_snapshot_id
from backfill_platform.lakehouse.tables import PLATFORM_NAMESPACE, PROD_NAMESPACE, SHADOW_NAMESPACE
from backfill_platform.pipeline.ledger.ledger import INGESTIONS_TABLE, LEDGER_TABLE
from backfill_platform.pipeline.names import production_key, production_table
from backfill_platform.pipeline.promotion.assets import build_production_asset
from backfill_platform.pipeline.shadow.assets import build_shadow_asset
from backfill_platform.pipeline.validation.fingerprints import checksum
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform_tests.support.session import range_tags

# Deliberately broken versions of views_per_title (spec `transform` references).
TRANSFORMS = "backfill_platform_tests.transforms"
HOURLY_TRANSFORMS = "backfill_platform_tests.hourly_transforms"


def dataset(name: str, active: str = "v2", extra_versions: dict | None = None, **changes) -> DatasetSpec:
    """views_per_title named `name`, with `extra_versions` (version -> function of TRANSFORMS)."""
    raw = demo_spec_data("views_per_title")
    raw["name"] = name
    raw["active_version"] = active
    for version, function in (extra_versions or {}).items():
        raw["versions"][version] = {"transform": f"{TRANSFORMS}:{function}"}
    raw.update(changes)
    return DatasetSpec.model_validate(raw)


@dataclass(frozen=True)
class ProductionNames:
    """A dataset's production as the platform names it: its asset and its table."""

    key: AssetKey  # `prod/<dataset>_production`
    table: str  # `lake.prod.<dataset>`: the table in the tests' Spark sessions (the default catalog)

    @property
    def path(self) -> list[str]:
        """The asset key's path, as GraphQL takes it (`assetKey: {path: [...]}`) and the UI shows it."""
        return list(self.key.path)

    @property
    def identifier(self) -> str:
        """The table as a client of the catalog itself names it (PyIceberg, DuckDB): `prod.<dataset>`."""
        return self.table.split(".", 1)[1]


def hourly_dataset_data(
    active: str, stream: str, name: str, column: str = "event_hour", kind: str = "timestamp"
) -> dict:
    """An hourly dataset's spec over `stream` (views and distinct viewers per title and hour,
    `hourly_transforms`); `column`/`kind` name and type its partition column."""
    versions = {"v1": "hourly_views", "v2": "viewers_doubled_between"}  # right, and the bad deploy
    return {
        "kind": "dataset",
        "name": name,
        "source_stream": stream,
        "partition_column": column,
        "bucket": "partition",  # an hour is validated as one bucket
        "key_columns": [column, "title_id"],
        "columns": {column: kind, "title_id": "string", "views": "long", "unique_viewers": "long"},
        "versions": {v: {"transform": f"{HOURLY_TRANSFORMS}:{f}"} for v, f in versions.items()},
        "active_version": active,
        "expected_rows": {"filter": "event_type = 'start'", "expression": "count(DISTINCT title_id)"},
        "reconciliation": [{"column": "views", "filter": "event_type = 'start'", "expression": "count(1)"}],
    }


# Plays per title and day of a time zone, by zone.
DAY_TRANSFORMS = {
    "UTC": "backfill_platform_tests.daily_transforms:daily_plays",
    "America/New_York": f"{HOURLY_TRANSFORMS}:new_york_plays",
    "Europe/Berlin": f"{HOURLY_TRANSFORMS}:berlin_plays",
}


def local_daily_data(name: str, stream: str, zone: str) -> dict:
    """A daily dataset over `stream` of the days of `zone`: plays and watch seconds per title and day
    (`daily_plays` for UTC, `hourly_transforms` for New York and Berlin), validated per day."""
    return {
        "kind": "dataset", "name": name, "source_stream": stream, "partition_timezone": zone,
        "partition_column": "event_date", "bucket": "day", "key_columns": ["event_date", "title_id"],
        "columns": {"event_date": "date", "title_id": "string", "plays": "long", "watch_seconds": "long"},
        "versions": {"v1": {"transform": DAY_TRANSFORMS[zone]}}, "active_version": "v1",
        "expected_rows": {"filter": "event_type IN ('start', 'stop')", "expression": "count(DISTINCT title_id)"},
        "reconciliation": [
            {"column": "plays", "filter": "event_type = 'start'", "expression": "count(1)"},
            {"column": "watch_seconds", "filter": "event_type = 'stop'", "expression": "sum(position_sec)"},
        ],
    }  # fmt: skip


def lake_table(namespace: str, name: str) -> str:
    """A table as the tests' Spark sessions name it: their catalog has the platform's default name."""
    return f"{settings.DEFAULT_CATALOG_NAME}.{namespace}.{name}"


# The platform's own tables: what each run ingested, and the ledger of promotions.
INGESTIONS = lake_table(PLATFORM_NAMESPACE, INGESTIONS_TABLE)
LEDGER = lake_table(PLATFORM_NAMESPACE, LEDGER_TABLE)


def shadow_table_of(name: str, version: str = "v2") -> str:
    """Dataset `name`'s shadow table of `version`, as the platform names it."""
    return lake_table(SHADOW_NAMESPACE, dataset(name).shadow_table(version))


def production(name: str) -> ProductionNames:
    """The names of dataset `name`'s production, from the platform's own naming (`production_key`,
    the production namespace): a test's module constants agree with what the platform writes and shows."""
    return ProductionNames(key=production_key(dataset(name)), table=lake_table(PROD_NAMESPACE, name))


def renamed_dataset_data(name: str) -> dict:
    """views_per_title named `name` (a project's component beside the demo's, which the CLI and jobs find
    by name)."""
    return {**demo_spec_data("views_per_title"), "name": name}


def promotion_chain(spec: DatasetSpec, stream) -> list:
    """The active version's shadow and production: what a backfill materializes."""
    return [build_shadow_asset(spec, [stream], spec.active_version), build_production_asset(spec, [stream])]


def run(spark_resource, assets: list, first: date, last: date, **tags: str):
    """One in-process run of `assets` over the days first..last; failures are returned, not raised."""
    return materialize(
        assets,
        resources={"spark": spark_resource},
        tags=range_tags(first, last, **tags),
        raise_on_error=False,
    )


def prod_state(spark, spec: DatasetSpec) -> tuple:
    """Production's current snapshot and checksum."""
    table = production_table(spark, spec)
    return current_snapshot_id(spark, table), checksum(spark.table(table))


def failed_checks(result) -> set[str]:
    return {c.check_name for c in result.get_asset_check_evaluations() if not c.passed}


def settled_by_day(result: ExecuteInProcessResult) -> dict[str, AssetCheckEvaluation]:
    """The run's `settled` verdicts by day (partition)."""
    return {c.partition: c for c in result.get_asset_check_evaluations() if c.check_name == "settled"}


def join_spec_data(name: str, playback: str, impressions: str, transform: str) -> dict:
    """The demo's join (`attributed_plays`, impressions from 30 minutes before each day) as dataset `name`
    over the streams `playback` and `impressions`, its active version the transform `TRANSFORMS:transform`."""
    dataset = demo_spec_data("attributed_plays")
    dataset.update(
        name=name,
        sources=[playback, {"stream": impressions, "lookback": "30m"}],
        versions={"v2": {"transform": f"{TRANSFORMS}:{transform}"}},
        active_version="v2",
        expected_rows={**dataset["expected_rows"], "source": playback},
    )
    return dataset
