"""How finely the classification's shuffle is cut (`ingest.classify_shuffle_partitions`): the session's own
setting while its partitions' sort fits a task's memory, then by the bytes of archive read."""

from __future__ import annotations

from backfill_platform.pipeline.events.ingest import (
    ARCHIVE_BYTES_PER_SHUFFLE_PARTITION,
    MAX_SHUFFLE_PARTITIONS,
    SPILLS_FROM_ARCHIVE_BYTES,
    classify_shuffle_partitions,
)

MIB = 2**20


def test_reads_up_to_the_big_day_keep_the_sessions_partitions() -> None:
    assert classify_shuffle_partitions(8, 0) == 8
    assert classify_shuffle_partitions(8, 17 * MIB) == 8  # 3 days x 200,000 events
    assert classify_shuffle_partitions(8, 123 * MIB) == 8  # the big day's archive, whole
    assert classify_shuffle_partitions(8, 8 * SPILLS_FROM_ARCHIVE_BYTES) == 8
    assert classify_shuffle_partitions(200, 1_200 * MIB) == 200  # a session cut finer keeps its own


def test_a_read_that_would_spill_gets_one_partition_per_slice_of_archive() -> None:
    just_over = 8 * SPILLS_FROM_ARCHIVE_BYTES + 1
    assert classify_shuffle_partitions(8, just_over) == -(-just_over // ARCHIVE_BYTES_PER_SHUFFLE_PARTITION)
    assert classify_shuffle_partitions(8, just_over) > 8
    assert classify_shuffle_partitions(8, 1_100 * MIB) == 138  # ten times the big day's window
    assert classify_shuffle_partitions(8, 10**15) == MAX_SHUFFLE_PARTITIONS
