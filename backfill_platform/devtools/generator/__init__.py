"""Synthetic Firehose-style playback-event archive plus the exact truth a correct ingestion must produce."""

from backfill_platform.devtools.generator.playback import GeneratorConfig, generate_playback_archive
from backfill_platform.devtools.generator.truth import (
    QUARANTINE_REASONS,
    ArchiveLine,
    compute_partitions,
    load_truth,
    read_archive,
)

__all__ = [
    "QUARANTINE_REASONS",
    "ArchiveLine",
    "GeneratorConfig",
    "compute_partitions",
    "generate_playback_archive",
    "load_truth",
    "read_archive",
]
