"""The ledger as PyIceberg reads it: a ledger not yet renamed by a Spark run of this version reads under
the new column names, and the answers its rows give do not depend on it."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pyarrow as pa

from backfill_platform.operations.ledger_view import current_names, latest
from backfill_platform.pipeline.ledger.ledger import key_of_row

AT = datetime(2026, 10, 3, tzinfo=UTC)


def test_a_column_renamed_since_reads_under_its_new_name():
    assert current_names(["dataset", "partition", "partition_key"]) == [
        "dataset",
        "partition_date",
        "partition_key",
    ]


def test_a_ledger_already_renamed_reads_as_it_is():
    names = ["dataset", "partition_date", "partition_key"]
    assert current_names(names) == names
    # Both names (an old writer added `partition` back): neither is renamed onto the other.
    assert current_names(["partition", "partition_date"]) == ["partition", "partition_date"]


def test_rows_of_an_old_ledger_answer_as_after_the_rename():
    old = pa.table({
        "partition": [date(2026, 10, 1), date(2026, 10, 2), date(2026, 10, 2)],
        "partition_key": [None, "2026-10-02-14:00", "2026-10-02-15:00"],
        "recorded_at": [AT, AT, AT],
        "run_id": ["r1", "r2", "r3"],
    })  # fmt: skip
    rows = old.rename_columns(current_names(old.column_names)).to_pylist()
    assert [key_of_row(row) for row in rows] == ["2026-10-01", "2026-10-02-14:00", "2026-10-02-15:00"]
    assert {key: row["run_id"] for key, row in latest(rows).items()} == {
        "2026-10-01": "r1",
        "2026-10-02-14:00": "r2",
        "2026-10-02-15:00": "r3",
    }
