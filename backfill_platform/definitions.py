"""Entry point of the code location (`dagster dev`, `dg`, `dagster asset materialize -m ...`): the
component instances of the package's defs folder (the demo), as a team's project loads its own (the
demo, the benchmark and the tests load the same through `components/registry.project_definitions`)."""

from pathlib import Path

from dagster import Definitions, definitions


@definitions
def defs() -> Definitions:
    from dagster.components import load_defs

    import backfill_platform.defs
    from backfill_platform.components.registry import refuse_flat_route
    from backfill_platform.specs.yaml_guard import check_folder

    # The former spec folders' variable, refused in one message before anything loads (every project's
    # Lakehouse refuses it too, inside Dagster's report of the tree).
    refuse_flat_route()

    # Dagster parses the component files itself: the platform's YAML bounds first (a bomb or a FIFO
    # named defs.yaml is refused with its file and line, not expanded or waited on).
    check_folder(Path(backfill_platform.defs.__file__).parent)
    # The package's parent is the project root in a checkout and in site-packages alike.
    project_root = Path(backfill_platform.defs.__file__).parents[2]
    return load_defs(backfill_platform.defs, project_root=project_root)
