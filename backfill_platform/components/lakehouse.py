"""The `Lakehouse` component: what every stream and dataset of a project runs on.

The Iceberg catalog and Spark resources of the current tier (environment variables, embedded SQLite
by default), the executor that records run workers and fences writers, the daily-refresh sensor and
the revert and replay jobs, which find the project's streams and datasets in the `specs` resource
(`components/registry.py`). One instance per project.
"""

from __future__ import annotations

from dagster import Component, ComponentLoadContext, Definitions


class Lakehouse(Component):
    """The lakehouse of this project: catalog and Spark resources from the environment (see
    docs/deployment.md), the fenced executor, the `daily_refresh` automation sensor and the revert job."""

    def build_defs(self, context: ComponentLoadContext) -> Definitions:
        from backfill_platform.components.registry import refuse_flat_route, tree_specs
        from backfill_platform.orchestration.factory import platform_definitions

        # Every code location has one Lakehouse: the variable of the former spec folders is refused here,
        # whichever definitions.py loads the project.
        refuse_flat_route()
        # The project's streams and datasets, for the jobs that look one up by name (revert, replay). Each
        # Dataset's own build_defs checks its SQL against its streams, and `platform_definitions` the
        # streams' isolation: not checked a second time here.
        return platform_definitions(tree_specs(context.component_tree))
