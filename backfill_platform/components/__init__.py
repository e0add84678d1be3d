"""Dagster Components of the platform: a stream, a dataset, and the lakehouse they run on.

A project declares instances in its defs folder (`defs.yaml` with `type: backfill_platform.components.Stream`
and the stream spec's fields as `attributes`), and `dg check defs`, `dg list defs`, `dg scaffold defs`
and `dg launch` work on them as on any component.
"""

from backfill_platform.components.dataset import Dataset
from backfill_platform.components.lakehouse import Lakehouse
from backfill_platform.components.stream import Stream

__all__ = ["Dataset", "Lakehouse", "Stream"]
