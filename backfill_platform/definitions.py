"""Entry point of the code location (`dagster dev`, `dagster asset materialize -m ...`)."""

from dagster import Definitions, definitions

from backfill_platform.factory import build_definitions


@definitions
def defs() -> Definitions:
    return build_definitions()
