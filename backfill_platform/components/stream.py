"""The `Stream` component: one archived event stream (its archive and its events, with their checks)."""

from __future__ import annotations

from dagster import ComponentLoadContext, Definitions

from backfill_platform.components.scaffold import SpecScaffolder, scaffold_with
from backfill_platform.components.spec_component import SpecComponent
from backfill_platform.specs.references import stream_problems
from backfill_platform.specs.stream import StreamSpec


@scaffold_with(SpecScaffolder)
class Stream(SpecComponent[StreamSpec]):
    """An event stream archived hourly as JSON lines: the observable archive and the events table
    (parsed, upcast to the latest schema, deduplicated, quarantined with reasons), checked per day.
    Attributes: the stream spec (see docs/spec-reference.md)."""

    spec_model = StreamSpec

    @classmethod
    def problems_at_load(cls, spec: StreamSpec) -> list:
        return stream_problems(spec)

    def build_defs(self, context: ComponentLoadContext) -> Definitions:
        from backfill_platform.orchestration.factory import stream_assets

        return Definitions(assets=stream_assets(self.spec))
