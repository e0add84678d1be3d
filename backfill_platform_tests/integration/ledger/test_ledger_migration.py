"""A ledger written before its columns were renamed is upgraded in place when this version first opens it.

The tables are created here with the DDL the platform wrote until `partition` became `partition_date`
(commit ad88922), and filled with rows of each kind: a day recorded before hours (no `partition_key`), a
day, an hour. `ensure_ledger` renames the column once, by metadata (same field id, no new snapshot);
every row reads back with the values it had, the readers give the answers they gave, and new rows are
written beside the old ones. PyIceberg's readers (`status`, `plan`, `report`) read a ledger not yet renamed
under the new names.
"""

from __future__ import annotations

import json
import threading
from datetime import UTC, date, datetime

import pytest

from backfill_platform.lakehouse.schema import SchemaConflict
from backfill_platform.lakehouse.snapshots import current_snapshot_id, iceberg_table
from backfill_platform.lakehouse.tables import PLATFORM_NAMESPACE
from backfill_platform.operations.ledger_view import ingestion_rows, latest, ledger_rows
from backfill_platform.pipeline.ledger.ledger import (
    IngestionRow,
    LedgerRow,
    append,
    ensure_ledger,
    ingestions_table,
    key_of_row,
    latest_ingestions,
    latest_shadow_rows,
    ledger_table,
)
from backfill_platform_tests.support.lakehouse import catalog_of, lakehouse_session

# The tables as the platform created them at ad88922, column for column.
OLD_INGESTIONS_DDL = (
    "stream string, partition date, run_id string, recorded_at timestamp, archive_files bigint, "
    "records bigint, written bigint, duplicates bigint, conflicting_ids bigint, quarantined bigint, "
    "late bigint, events_snapshot_id bigint, checks_passed boolean, failed_checks string, events_rows bigint, "
    "events_row_hash string, provisional boolean, run_seconds double, partition_key string, erased bigint, "
    "erasure_snapshot_id bigint"
)
OLD_LEDGER_DDL = (
    "dataset string, version string, partition date, run_id string, recorded_at timestamp, stream string, "
    "backfill_id string, reason string, archive_files bigint, records bigint, events_written bigint, "
    "duplicates bigint, quarantined bigint, late bigint, shadow_snapshot_id bigint, shadow_rows bigint, "
    "shadow_row_hash string, checks_passed boolean, failed_checks string, check_digest string, "
    "diverging_rows bigint, events_rows bigint, events_row_hash string, provisional boolean, "
    "adopted boolean, sources string, inputs string, promoted_snapshot_id bigint, promoted_at timestamp, "
    "erased bigint, promotion_run_id string, reverted_snapshot_id bigint, reverted_at timestamp, "
    "partition_key string, input_partitions string"
)
D1, D2, D3 = date(2026, 10, 1), date(2026, 10, 2), date(2026, 10, 3)
HOUR = "2026-10-02-14:00"
AT = datetime(2026, 10, 5, 9, 0, tzinfo=UTC)

# Rows of today's ledger (columns not named are null): D1 before hours (no key), D1 validated twice (the
# later run failed), D2 as a day of a daily dataset and as an hour of an hourly one.
OLD_LEDGER_ROWS = [
    {"dataset": "views", "version": "v1", "partition": D1, "run_id": "r1", "recorded_at": AT, "stream": "playback",
     "shadow_rows": 10, "shadow_row_hash": "a1", "checks_passed": True, "adopted": False,
     "promoted_snapshot_id": 7, "promoted_at": AT},
    {"dataset": "views", "version": "v2", "partition": D1, "run_id": "r2", "recorded_at": AT, "stream": "playback",
     "shadow_rows": 11, "checks_passed": True, "adopted": False, "partition_key": "2026-10-01"},
    {"dataset": "views", "version": "v2", "partition": D1, "run_id": "r3", "recorded_at": AT.replace(hour=10),
     "stream": "playback", "shadow_rows": 12, "checks_passed": False, "failed_checks": "checksums",
     "adopted": False, "partition_key": "2026-10-01"},
    {"dataset": "views", "version": "v2", "partition": D2, "run_id": "r2", "recorded_at": AT, "stream": "playback",
     "shadow_rows": 13, "checks_passed": True, "adopted": False, "partition_key": "2026-10-02"},
    {"dataset": "plays_hourly", "version": "v1", "partition": D2, "run_id": "h1", "recorded_at": AT,
     "stream": "playback_hourly", "shadow_rows": 3, "checks_passed": True, "adopted": False, "partition_key": HOUR},
]  # fmt: skip
OLD_INGESTION_ROWS = [
    {"stream": "playback", "partition": D1, "run_id": "e1", "recorded_at": AT, "records": 100, "written": 98,
     "checks_passed": True},
    {"stream": "playback_hourly", "partition": D2, "run_id": "e2", "recorded_at": AT, "records": 5, "written": 5,
     "checks_passed": True, "partition_key": HOUR},
]  # fmt: skip


def write_old_ledger(session) -> None:
    """Both tables with today's DDL (unpartitioned, as the platform creates them) and their rows."""
    session.sql(f"CREATE NAMESPACE IF NOT EXISTS {ledger_table(session).rsplit('.', 1)[0]}")
    for identifier, ddl, rows in (
        (ingestions_table(session), OLD_INGESTIONS_DDL, OLD_INGESTION_ROWS),
        (ledger_table(session), OLD_LEDGER_DDL, OLD_LEDGER_ROWS),
    ):
        session.sql(f"CREATE TABLE {identifier} ({ddl}) USING iceberg TBLPROPERTIES ('format-version'='2')")
        names = [column.split()[0] for column in ddl.split(", ")]
        session.createDataFrame([tuple(row.get(name) for name in names) for row in rows], ddl).writeTo(
            identifier
        ).append()


def rows_of(session, identifier: str) -> list[dict]:
    """Every row of the table as a dict, in a stable order."""
    return sorted(
        (r.asDict() for r in session.table(identifier).collect()), key=lambda r: json.dumps(r, default=str)
    )


def schema_state(session, identifier: str) -> tuple[int, int, dict[str, int]]:
    """(schemas in the table's metadata, current schema id, {column: field id}) from its Iceberg metadata."""
    table = iceberg_table(session, identifier)
    parsed = json.loads(session.sparkContext._jvm.org.apache.iceberg.SchemaParser.toJson(table.schema()))
    return table.schemas().size(), table.schema().schemaId(), {f["name"]: f["id"] for f in parsed["fields"]}


def renamed(rows: list[dict]) -> list[dict]:
    """`rows` as the new schema names their columns."""
    return [{("partition_date" if k == "partition" else k): v for k, v in row.items()} for row in rows]


def test_a_ledger_of_the_old_schema_is_renamed_once_in_place_and_reads_the_same(spark, tmp_path):
    session = lakehouse_session(spark, tmp_path)
    catalog = catalog_of(tmp_path).load()
    write_old_ledger(session)
    tables = (ingestions_table(session), ledger_table(session))
    before = {
        t: (rows_of(session, t), schema_state(session, t), current_snapshot_id(session, t)) for t in tables
    }
    # PyIceberg's readers, before any Spark run of this version: the rows under the new names.
    assert key_of_row(
        latest(ledger_rows(catalog, "views"), lambda r: r["version"] == "v1")["2026-10-01"]
    ) == ("2026-10-01")
    assert {r["partition_date"] for r in ingestion_rows(catalog, "playback")} == {D1}
    assert "partition" in {f.name for f in catalog.load_table((PLATFORM_NAMESPACE, "ledger")).schema().fields}

    ensure_ledger(session)

    for table in tables:
        old_rows, (schemas, _, ids), snapshot = before[table]
        now_schemas, schema_id, now_ids = schema_state(session, table)
        assert now_schemas == schemas + 1  # one schema change: the rename
        assert now_ids == {
            ("partition_date" if k == "partition" else k): v for k, v in ids.items()
        }  # same ids
        assert current_snapshot_id(session, table) == snapshot  # metadata only: no data file rewritten
        assert rows_of(session, table) == renamed(old_rows)
        ensure_ledger(session)  # opened again: nothing to do
        assert schema_state(session, table) == (now_schemas, schema_id, now_ids)

    # The readers' answers, the row before hours included (its key is its date).
    gate = latest_shadow_rows(session, "views", "v2", [D1, D2])
    assert {key: row["run_id"] for key, row in gate.items()} == {"2026-10-01": "r3", "2026-10-02": "r2"}
    assert latest_shadow_rows(session, "views", "v1", [D1])["2026-10-01"]["shadow_rows"] == 10
    assert latest_shadow_rows(session, "plays_hourly", "v1", [HOUR])[HOUR]["shadow_rows"] == 3
    assert latest_ingestions(session, "playback", [D1])["2026-10-01"]["written"] == 98
    assert latest_ingestions(session, "playback_hourly", [HOUR])[HOUR]["records"] == 5
    status = latest(ledger_rows(catalog, "views"), lambda r: r["version"] == "v2")
    assert {key: row["run_id"] for key, row in status.items()} == {"2026-10-01": "r3", "2026-10-02": "r2"}
    assert "partition" not in {
        f.name for f in catalog.load_table((PLATFORM_NAMESPACE, "ledger")).schema().fields
    }

    # New rows beside the old ones.
    new_row = LedgerRow(
        dataset="views", version="v2", partition_date=D3, partition_key="2026-10-03", run_id="r4",
        recorded_at=AT, stream="playback", shadow_rows=14,
    )  # fmt: skip
    append(session, [new_row], LedgerRow)
    new_ingestion = IngestionRow(
        stream="playback", partition_date=D3, partition_key="2026-10-03", run_id="e3", recorded_at=AT,
        archive_files=1, records=7, written=7, duplicates=0, conflicting_ids=0, quarantined=0, late=0,
        events_snapshot_id=None, checks_passed=True, failed_checks=None,
    )  # fmt: skip
    append(session, [new_ingestion], IngestionRow)
    assert latest_shadow_rows(session, "views", "v2", [D3])["2026-10-03"]["shadow_rows"] == 14
    assert latest_ingestions(session, "playback", [D1, D3])["2026-10-03"]["written"] == 7
    assert len(rows_of(session, ledger_table(session))) == len(OLD_LEDGER_ROWS) + 1
    assert {r["partition_date"] for r in ingestion_rows(catalog, "playback")} == {D1, D3}


def test_runs_racing_to_open_an_old_ledger_rename_it_once(spark, tmp_path):
    """Two sessions (each with catalog connections of its own, as two processes) open the old ledger at
    once: both succeed, the loser seeing the rename done, and the tables hold one rename."""
    sessions = [lakehouse_session(spark, tmp_path) for _ in range(2)]
    write_old_ledger(sessions[0])
    before = {
        t: schema_state(sessions[0], t)[0] for t in (ingestions_table(sessions[0]), ledger_table(sessions[0]))
    }
    start, errors = threading.Barrier(2), []

    def open_ledger(session) -> None:
        start.wait()
        try:
            ensure_ledger(session)
        except Exception as error:  # reported by the assertion below, with the thread's error
            errors.append(error)

    threads = [threading.Thread(target=open_ledger, args=(s,)) for s in sessions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    reader = lakehouse_session(spark, tmp_path)
    for table, schemas in before.items():
        count, _, ids = schema_state(reader, table)
        assert count == schemas + 1 and "partition_date" in ids and "partition" not in ids
    assert {r["partition_date"] for r in rows_of(reader, ledger_table(reader))} == {D1, D2}


def test_a_ledger_a_writer_of_the_old_schema_added_partition_back_to_is_refused(spark, tmp_path):
    """After the rename, a process of the old version re-adds `partition` (its `ensure_ledger` adds the
    columns it misses): the next run of this version refuses the table, naming both columns, instead of
    writing rows whose date the old writer's rows keep elsewhere."""
    session = lakehouse_session(spark, tmp_path)
    write_old_ledger(session)
    ensure_ledger(session)
    session.sql(
        f"ALTER TABLE {ledger_table(session)} ADD COLUMNS (partition date)"
    )  # as the old version does
    with pytest.raises(SchemaConflict, match="has both 'partition' and 'partition_date'"):
        ensure_ledger(session)
    assert {r["partition_date"] for r in rows_of(session, ledger_table(session))} == {D1, D2}
