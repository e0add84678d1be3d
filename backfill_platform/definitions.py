"""Entry point of the code location (`dagster dev`, `dg`, `dagster asset materialize -m ...`): the
component instances of the package's defs folder (the demo), loaded as a team's project loads its own,
through `components/registry.project_definitions` (which the demo, the benchmark and the tests call too)."""

from dagster import Definitions, definitions


@definitions
def defs() -> Definitions:
    from backfill_platform.components.registry import package_project, project_definitions

    # Before Dagster parses a file: the former spec folders' variable refused in one message, then the
    # platform's YAML bounds on the defs folder (a bomb or a FIFO named defs.yaml is refused with its file
    # and line, not expanded or waited on). `registry.defs_module_of` runs both.
    return project_definitions(package_project())
