"""The `Lakehouse` component: what every stream and dataset of a project runs on.

The Iceberg catalog and Spark resources of the current tier (environment variables, embedded SQLite
by default), the executor that records run workers and fences writers, the daily-refresh sensor and
the revert and replay jobs, which find the project's streams and datasets in the `specs` resource
(`components/registry.py`). One instance per project. In this package's own project it also builds the
assets of the spec folders named in BACKFILL_PLATFORM_SPECS.
"""

from __future__ import annotations

from dagster import Component, ComponentLoadContext, Definitions


class Lakehouse(Component):
    """The lakehouse of this project: catalog and Spark resources from the environment (see
    docs/deployment.md), the fenced executor, the `daily_refresh` automation sensor and the revert job."""

    def build_defs(self, context: ComponentLoadContext) -> Definitions:
        from backfill_platform.components.registry import combined, folder_specs, project_of, tree_specs
        from backfill_platform.orchestration.factory import platform_definitions, spec_assets

        tree = context.component_tree
        components = tree_specs(tree)
        # This package's own project also serves the spec folders of BACKFILL_PLATFORM_SPECS (none for
        # a team's project): their assets are built here, where every stream they may read is known.
        folders = folder_specs(project_of(tree), components)
        # The project's streams and datasets, for the jobs that look one up by name (revert, replay).
        specs = combined(components, folders)
        assets = spec_assets(folders.streams.values(), folders.datasets.values(), specs.streams)
        return Definitions.merge(platform_definitions(specs), Definitions(assets=assets))
