"""The ledger read through PyIceberg: no Spark session, and no table data besides `platform.*`.

`plan` and `status` must answer in a second or two, so they read the two ledger tables with PyIceberg
(the same catalog Spark writes) and never start a JVM. Rows come back as plain dicts; `latest` picks
each partition's latest row by the rule the platform's own gate uses (`ledger.latest`). Partitions are
named by their keys (`2026-10-01`, or `2026-10-01-14:00` for an hour: `ledger.key_of_row`).

A ledger that no Spark run of this version has opened yet still has its old column names
(`ledger.RENAMED_COLUMNS`): its rows are read under the new ones. Renaming is left to Spark's
`ensure_ledger`, so `status` and `plan` stay readers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from backfill_platform.lakehouse.tables import PLATFORM_NAMESPACE
from backfill_platform.pipeline.ledger.latest import latest_key
from backfill_platform.pipeline.ledger.ledger import (
    INGESTIONS_TABLE,
    LEDGER_TABLE,
    RENAMED_COLUMNS,
    key_of_row,
)

Row = dict[str, Any]


def read_rows(catalog: Any, table: str, column: str, value: str) -> list[Row]:
    """Rows of `platform.<table>` whose `column` equals `value`, under the current column names; none when
    the table does not exist yet."""
    from pyiceberg.exceptions import NoSuchTableError
    from pyiceberg.expressions import EqualTo

    try:
        loaded = catalog.load_table((PLATFORM_NAMESPACE, table))
    except NoSuchTableError:
        return []
    found = loaded.scan(row_filter=EqualTo(column, value)).to_arrow()
    return found.rename_columns(current_names(found.column_names)).to_pylist()


def current_names(columns: list[str]) -> list[str]:
    """`columns` of a ledger table with the renamed ones (`RENAMED_COLUMNS`) under their new names; a
    table already renamed is read as it is."""
    return [
        RENAMED_COLUMNS[name] if name in RENAMED_COLUMNS and RENAMED_COLUMNS[name] not in columns else name
        for name in columns
    ]


def ledger_rows(catalog: Any, dataset: str) -> list[Row]:
    """Every `platform.ledger` row of a dataset: validations of every version, adoptions."""
    return read_rows(catalog, LEDGER_TABLE, "dataset", dataset)


def ingestion_rows(catalog: Any, stream: str) -> list[Row]:
    """Every `platform.ingestions` row of a stream: one per event-time day and events run."""
    return read_rows(catalog, INGESTIONS_TABLE, "stream", stream)


def latest(rows: Iterable[Row], where: Callable[[Row], bool] = lambda _: True) -> dict[str, Row]:
    """Each partition's latest row (`latest_key`) among those `where` accepts, by partition key."""
    found: dict[str, Row] = {}
    for row in rows:
        day = key_of_row(row)
        if where(row) and (day not in found or latest_key(row) > latest_key(found[day])):
            found[day] = row
    return found


def in_production(rows: Iterable[Row]) -> dict[str, Row]:
    """Each partition's row that production holds now (by partition key): the latest promotion or
    adoption not reverted."""
    found: dict[str, Row] = {}
    for row in rows:
        if row["promoted_snapshot_id"] is None or row["reverted_snapshot_id"] is not None:
            continue
        day, at = key_of_row(row), row["promoted_at"] or row["recorded_at"]
        if day not in found or at > (found[day]["promoted_at"] or found[day]["recorded_at"]):
            found[day] = row
    return found


def events_throughput(ingestions: Iterable[Row]) -> tuple[float, int] | None:
    """(records per second, runs measured) of the events runs that recorded their wall time.

    Every day of a range run carries the run's seconds, so a run's rate is its days' records summed
    over its seconds; runs recorded before the platform measured time are left out (None if all were).
    """
    runs: dict[str, list[Row]] = {}
    for row in ingestions:
        if row.get("run_seconds"):
            runs.setdefault(row["run_id"], []).append(row)
    if not runs:
        return None
    records = sum(r["records"] or 0 for rows in runs.values() for r in rows)
    seconds = sum(rows[0]["run_seconds"] for rows in runs.values())
    return records / seconds, len(runs)


def production_label(row: Row | None) -> str:
    """`v2 @ 8123… (provisional)`, `adopted @ …`, or `-` for what production holds for a day."""
    if row is None:
        return "-"
    label = f"{row['version']} @ {row['promoted_snapshot_id']}"
    return label + " (provisional)" if row.get("provisional") else label
