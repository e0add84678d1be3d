"""The `Dataset` component: a table derived from one or several streams' events, with its shadow
versions, blocking checks and the production table they are promoted into."""

from __future__ import annotations

from dagster import ComponentLoadContext, Definitions

from backfill_platform.components.scaffold import SpecScaffolder, scaffold_with
from backfill_platform.components.spec_component import SpecComponent
from backfill_platform.components.stream import Stream
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.references import dataset_problems
from backfill_platform.specs.spec_set import raise_problems
from backfill_platform.specs.stream import StreamSpec
from backfill_platform.specs.yaml_guard import SpecError


@scaffold_with(SpecScaffolder)
class Dataset(SpecComponent[DatasetSpec]):
    """A dataset computed from the events of `source_stream` (or of several `sources`) by versioned
    transforms: one shadow table per version, validated per day, and the production table fed by the
    active version's validated shadow in one atomic Iceberg commit. Attributes: the dataset spec (see
    docs/spec-reference.md)."""

    spec_model = DatasetSpec

    def build_defs(self, context: ComponentLoadContext) -> Definitions:
        from backfill_platform.orchestration.factory import dataset_assets

        streams = source_streams(self.spec, context)
        # Checked here, where the streams are known: every SQL expression against its source's events.
        raise_problems(self.path, dataset_problems(self.spec, streams))
        return Definitions(assets=dataset_assets(self.spec, streams))


def source_streams(spec: DatasetSpec, context: ComponentLoadContext) -> dict[str, StreamSpec]:
    """The stream components of the same project that the dataset reads, by name."""
    streams = {s.spec.name: s.spec for s in context.component_tree.get_all_components(of_type=Stream)}
    unknown = [name for name in spec.stream_names if name not in streams]
    if unknown:
        field = "sources" if spec.named_sources else "source_stream"
        raise SpecError(
            f"{spec._source_path}: field '{field}': {', '.join(map(repr, unknown))} is not a Stream component "
            f"of this project (streams: {sorted(streams) or 'none'})"
        )
    return {name: streams[name] for name in spec.stream_names}
