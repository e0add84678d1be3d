"""The `Dataset` component: a table derived from a stream's events, with its shadow versions,
blocking checks and the production table they are promoted into."""

from __future__ import annotations

from dagster import ComponentLoadContext, Definitions

from backfill_platform.components.scaffold import SpecScaffolder, scaffold_with
from backfill_platform.components.spec_component import SpecComponent
from backfill_platform.components.stream import Stream
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.loader import SpecError, raise_problems
from backfill_platform.specs.references import dataset_problems
from backfill_platform.specs.stream import StreamSpec


@scaffold_with(SpecScaffolder)
class Dataset(SpecComponent[DatasetSpec]):
    """A dataset computed from the events of `source_stream` by versioned transforms: one shadow table
    per version, validated per day, and the production table fed by the active version's validated
    shadow in one atomic Iceberg commit. Attributes: the dataset spec (see the README)."""

    spec_model = DatasetSpec

    def build_defs(self, context: ComponentLoadContext) -> Definitions:
        from backfill_platform.orchestration.factory import dataset_assets

        stream = source_stream(self.spec, context)
        # Checked here, where the stream is known: every SQL expression against its events' columns.
        raise_problems(self.path, dataset_problems(self.spec, {stream.name: stream}))
        return Definitions(assets=dataset_assets(self.spec, stream))


def source_stream(spec: DatasetSpec, context: ComponentLoadContext) -> StreamSpec:
    """The stream component of the same project that the dataset names."""
    streams = {s.spec.name: s.spec for s in context.component_tree.get_all_components(of_type=Stream)}
    if spec.source_stream not in streams:
        raise SpecError(
            f"{spec._source_path}: field 'source_stream': {spec.source_stream!r} is not a Stream component of "
            f"this project (streams: {sorted(streams) or 'none'})"
        )
    return streams[spec.source_stream]
