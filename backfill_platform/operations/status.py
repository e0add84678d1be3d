"""`backfill-platform status`: each partition's state per dataset, from the ledger alone (through PyIceberg).

A partition (a day, or an hour of an hourly dataset) is, in order of what needs attention first:
- **stale**: the events were re-derived after the active version's latest validation (the ingestion's
  fingerprint differs from the one the validation judged): re-materialize the shadow, then promote;
- **blocked**: the partition's latest events or its latest validation failed blocking checks (named);
- **provisional**: production holds a validation made before the partition settled;
- **promoted**: production holds the active version's latest validation (snapshot, version), or,
  with no validation of the active version, another version's promotion;
- **validated**: the latest validation passed but production holds something else (or nothing);
- **adopted**: production holds adopted, unvalidated data and the active version never validated it;
- **ingested** / nothing: only events exist, or nothing at all.
The ledger is read as it is; `backfill-platform ledger` first repairs it from production's history if a
process died between a production commit and its ledger write.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rich.table import Table

from backfill_platform.lakehouse.resources import open_catalog
from backfill_platform.operations.ledger_view import (
    Row,
    in_production,
    ingestion_rows,
    latest,
    ledger_rows,
    production_label,
)
from backfill_platform.operations.ranges import partition_noun
from backfill_platform.pipeline.shadow.inputs import source_days
from backfill_platform.pipeline.validation.fingerprints import Fingerprint, fingerprint_sum
from backfill_platform.pipeline.validation.partition_inputs import PartitionInputs
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.grain import Grain
from backfill_platform.specs.stream import StreamSpec

STATE_STYLE = {"stale": "yellow", "blocked": "red", "provisional": "cyan", "promoted": "green"}


@dataclass(frozen=True)
class PartitionStatus:
    dataset: str
    key: str  # the partition: a day (`2026-10-01`) or an hour (`2026-10-01-14:00`)
    state: str
    production: Row | None  # the ledger row production holds for the partition
    validation: Row | None  # the active version's latest validation
    detail: str


def partition_state(
    validation: Row | None,
    production: Row | None,
    ingestion: Row | None,
    inputs: tuple[str, str] | None = None,
    joined: bool = False,
) -> tuple[str, str]:
    """(state, detail) of one partition; see the module docstring for the order. A dataset reading more
    than its own partition of one stream (`joined`) is judged stale or blocked by `join_inputs_state`
    (`inputs`) instead of by its first stream's ingestion."""
    if inputs is not None:
        return inputs
    if (
        not joined
        and validation is not None
        and ingestion is not None
        and Fingerprint.recorded(validation, "events") != Fingerprint.recorded(ingestion, "events")
    ):
        return "stale", (
            f"events re-derived in run {ingestion['run_id']} after validation run {validation['run_id']}"
        )
    if not joined and ingestion is not None and ingestion["checks_passed"] is False:
        return "blocked", f"events failed {ingestion['failed_checks']} in run {ingestion['run_id']}"
    if validation is not None and not validation["checks_passed"]:
        return "blocked", f"failed {validation['failed_checks']} in run {validation['run_id']}"
    if production is not None and (validation is None or production is validation):
        if production["adopted"]:
            return "adopted", f"unvalidated: {production.get('reason') or 'no reason recorded'}"
        state = "provisional" if production.get("provisional") else "promoted"
        return state, f"promotion run {production['promotion_run_id'] or '-'}"
    if validation is not None:
        return "validated", f"passed in run {validation['run_id']}, not what production holds"
    return ("ingested", f"events run {ingestion['run_id']}") if ingestion else ("-", "nothing recorded")


def dataset_status(
    catalog, spec: DatasetSpec, stream_grains: Mapping[str, Grain] | None = None
) -> list[PartitionStatus]:
    """Every partition the ledger knows for the dataset (its stream's events ingested, validated, adopted
    or promoted), in order. `stream_grains`: each source's grain (default: the project's streams')."""
    grains = stream_grains or _stream_grains(spec)
    rows = ledger_rows(catalog, spec.name)
    version = spec.active_version
    validations = latest(rows, lambda r: r["version"] == version and not r["adopted"])
    production = in_production(rows)
    by_stream = {name: latest(ingestion_rows(catalog, name)) for name in spec.stream_names}
    # A source of another grain (the hours of a day) is judged partition by partition, as a join's.
    rolled_up = any(grain != spec.grain for grain in grains.values())
    ingestions = {} if rolled_up else by_stream[spec.primary_stream]
    joined = len(spec.inputs) > 1 or bool(spec.inputs[0].lookback) or rolled_up
    statuses = []
    for key in sorted(set(validations) | set(production) | set(ingestions)):
        validation = validations.get(key)
        inputs = join_inputs_state(spec, validation, by_stream, key, grains)
        state, detail = partition_state(validation, production.get(key), ingestions.get(key), inputs, joined)
        statuses.append(PartitionStatus(spec.name, key, state, production.get(key), validation, detail))
    return statuses


def join_inputs_state(
    spec: DatasetSpec,
    validation: Row | None,
    ingestions: dict[str, dict[str, Row]],
    key: str,
    grains: Mapping[str, Grain],
) -> tuple[str, str] | None:
    """Stale or blocked for a partition that reads several sources, a lookback or a source of another
    grain (None otherwise, or when every source partition it reads is fine). `ingestions`: each stream's
    latest rows by partition key; `grains`: each stream's grain.

    Judged by fingerprint, as the promotion gate judges, wherever the ledger holds what the partition read:
    a source read without lookback is compared with what the validation recorded for it (`inputs`) — its
    own partition's fingerprint, or, for a day rolled up from hours, the sum of its hours' (fingerprints
    are exact sums, so the hours add up to the day): hours re-derived with the same rows leave the day as
    it was. A lookback reads part of another partition, which no recorded fingerprint covers: such a
    source is stale when a partition it reads was ingested after the validation."""
    if len(spec.inputs) == 1 and not spec.inputs[0].lookback and grains[spec.primary_stream] == spec.grain:
        return None
    recorded = PartitionInputs.parse(validation.get("inputs")) if validation is not None else None
    for source in spec.inputs:
        read = {
            read_day: ingestions[source.stream].get(read_day)
            for read_day in source_days([key], source, spec.grain, grains[source.stream])
        }
        for read_day, ingestion in read.items():
            if ingestion is not None and ingestion["checks_passed"] is False:
                failed = ingestion["failed_checks"]
                return (
                    "blocked",
                    f"{source.stream} {read_day}: events failed {failed} in run {ingestion['run_id']}",
                )
        known = [(d, i) for d, i in read.items() if i is not None]
        if validation is None or not known:
            continue
        newer = [
            (d, i) for d, i in read.items() if i is not None and i["recorded_at"] > validation["recorded_at"]
        ]
        then = recorded.per_source.get(source.stream) if recorded is not None else None
        now = _read_fingerprint(read) if not source.lookback else None
        changed = then != now if then is not None and now is not None else bool(newer)
        if changed:
            read_day, ingestion = (newer or known)[0]
            return "stale", (
                f"{source.stream} {read_day} re-derived in run {ingestion['run_id']} after validation run "
                f"{validation['run_id']}"
                + (f" ({len(newer)} of the {len(read)} partitions it reads)" if len(read) > 1 else "")
            )
    return None


def _read_fingerprint(read: Mapping[str, Row | None]) -> Fingerprint | None:
    """The fingerprint of the events of the source partitions a partition reads whole: the sum of their
    latest ingestions' (a partition never ingested holds none); None where one was recorded without it."""
    fingerprints = [
        Fingerprint.EMPTY if row is None else Fingerprint.recorded(row, "events") for row in read.values()
    ]
    if any(f is None for f in fingerprints):
        return None
    return fingerprint_sum(f for f in fingerprints if f is not None)


def status(datasets: list[DatasetSpec]) -> list[PartitionStatus]:
    catalog, streams = open_catalog(), _project_streams()
    return [
        s
        for spec in datasets
        for s in dataset_status(catalog, spec, {name: streams[name].grain for name in spec.stream_names})
    ]


def _project_streams() -> Mapping[str, StreamSpec]:
    from backfill_platform.components.registry import project_specs

    return project_specs().streams


def _stream_grains(spec: DatasetSpec) -> dict[str, Grain]:
    """The grain of each stream the dataset reads, from the project's specs."""
    streams = _project_streams()
    return {name: streams[name].grain for name in spec.stream_names}


def status_table(statuses: list[PartitionStatus]) -> Table:
    """One row per dataset and partition; the partitions are named `day`, `hour` or `day or hour`."""
    noun = partition_noun(s.key for s in statuses)
    table = Table(title=f"status per dataset and {noun} (from the ledger)")
    for column in ("dataset", noun, "state", "production (version @ snapshot)", "detail"):
        table.add_column(column)
    for s in statuses:
        style = STATE_STYLE.get(s.state)
        table.add_row(
            s.dataset, s.key, f"[{style}]{s.state}" if style else s.state,
            production_label(s.production), s.detail,
        )  # fmt: skip
    return table
