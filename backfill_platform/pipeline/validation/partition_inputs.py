"""What a dataset day read from its sources, and everything a shadow run judged about those inputs.

`PartitionInputs` is one day's input fingerprint per source (see `pipeline/shadow/inputs.py` for what a day
reads); `JudgedInputs` carries, for a run's days, the events-side expectations, the whole-day fingerprints
and latest ingestions of every source day read, and each day's inputs: what the `events_validated` check
judges and what the ledger records with the validation.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from backfill_platform.pipeline.validation.buckets import Bucket, BucketFigures
from backfill_platform.pipeline.validation.fingerprints import Fingerprint, fingerprint_sum
from backfill_platform.specs.dataset import DatasetSpec
from backfill_platform.specs.grain import Grain

# An ingestion's figures that add up over partitions (the ledger's archive figures of a dataset day).
INGESTION_FIGURES = ("archive_files", "records", "written", "duplicates", "quarantined", "late", "erased")


@dataclass(frozen=True)
class PartitionInputs:
    """What one dataset day read, per source: recorded with its validation, compared by the gate."""

    per_source: dict[str, Fingerprint]

    @property
    def total(self) -> Fingerprint:
        """The sum over sources (the ledger's `events_rows`/`events_row_hash`)."""
        return fingerprint_sum(self.per_source.values())

    def text(self) -> str:
        return ";".join(f"{name}={f.text()}" for name, f in sorted(self.per_source.items()))

    @classmethod
    def parse(cls, text: str | None) -> PartitionInputs | None:
        if not text:
            return None
        parts = (item.split("=", 1) for item in text.split(";"))
        return cls({name: Fingerprint.parse(f) for name, f in parts})

    def changed_sources(self, other: PartitionInputs) -> list[str]:
        names = set(self.per_source) | set(other.per_source)
        return sorted(n for n in names if self.per_source.get(n) != other.per_source.get(n))


def partition_inputs(
    per_source: dict[str, dict[str, Fingerprint]], days: list[str]
) -> dict[str, PartitionInputs]:
    """Each day's Inputs from each source's input fingerprints by day."""
    return {
        d: PartitionInputs({name: fingerprints[d] for name, fingerprints in per_source.items()}) for d in days
    }


@dataclass
class JudgedInputs:
    """The inputs of a shadow run's days, as the run pinned them."""

    spec: DatasetSpec
    expected: dict[Bucket, BucketFigures] = field(default_factory=dict)
    # stream -> source day -> the whole day's fingerprint / latest ingestion row
    fingerprints_by_partition: dict[str, dict[str, Fingerprint]] = field(default_factory=dict)
    ingestions: dict[str, dict[str, dict]] = field(default_factory=dict)
    # dataset day -> what it read, and the (stream, source day) pairs it read
    inputs: dict[str, PartitionInputs] = field(default_factory=dict)
    reads: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    def input_partitions(self, day: str) -> str | None:
        """How many partitions of each source the day read, in the dataset's order of sources:
        `playback_hourly=25` for a New York day of 25 hours, `playback=1;impressions=2` for a join whose
        lookback reads the day before. None when the run did not record what the day read."""
        reads = self.reads.get(day)
        if reads is None:
            return None
        counts = {
            name: len({key for stream, key in reads if stream == name}) for name in self.spec.stream_names
        }
        return ";".join(f"{name}={count}" for name, count in counts.items())

    def own_days_ingestion(self, day: str) -> dict:
        """The day's own ingestion figures of each source, summed (the ledger's archive figures): those of
        the source partitions inside it (the day itself, or the hours of a day rolled up from them; not a
        lookback's)."""
        start, end = self.spec.grain.bounds(day)
        own = [
            self.ingestions[stream].get(key)
            for stream, key in self.reads.get(day, [(name, day) for name in self.spec.stream_names])
            if start <= Grain.of_key(key).bounds(key)[0] and Grain.of_key(key).bounds(key)[1] <= end
        ]
        found = [r for r in own if r]
        if not found:
            return {}
        summed = {k: sum(r[k] or 0 for r in found) for k in INGESTION_FIGURES}
        return {**summed, "provisional": any(r.get("provisional") for r in found)}
