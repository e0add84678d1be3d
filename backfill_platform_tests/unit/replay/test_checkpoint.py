"""A replay's checkpoint file (pipeline/replay/checkpoint.py; issue 30): one that is not a regular file is
refused, never waited on."""

from __future__ import annotations

import os

import pytest

from backfill_platform_tests.support.hostile import nothing_outside  # noqa: F401 - an autouse fixture


@pytest.mark.timeout(60)
def test_a_checkpoint_that_is_a_fifo_is_refused_not_waited_on(tmp_path):
    from backfill_platform.pipeline.replay.checkpoint import CheckpointMismatch, load

    os.mkfifo(tmp_path / "checkpoint.json")
    with pytest.raises(CheckpointMismatch, match="is not a regular file"):
        load(tmp_path / "checkpoint.json")
