"""Archive files as records, format by format (no Spark): concatenated JSON split exactly, Parquet and
Avro rows as JSON objects, and damaged files as one `unreadable_file` record after what could be read."""

from __future__ import annotations

import gzip
import io
import json
import random
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from backfill_platform.pipeline.archive import records
from backfill_platform.pipeline.archive.records import RecordFormat, iter_records

CONCATENATED = RecordFormat("json_concatenated", 4096)


def _split(data: bytes, fmt: RecordFormat = CONCATENATED) -> list[tuple]:
    return list(iter_records(io.BytesIO(data), fmt))


def _objects(seed: int, n: int) -> list[dict]:
    rng = random.Random(seed)
    tricky = ["}{", '"}{"', "\\", '\\"}', "{[", "]}", "é✓", "\n", '{"a":1}']
    return [
        {
            "event_id": f"e{i}",
            "text": "".join(rng.choice(tricky) for _ in range(rng.randint(0, 4))),
            "nested": {"list": [1, {"x": rng.choice(tricky)}], "empty": {}},
        }
        for i in range(n)
    ]


@pytest.mark.parametrize("chunk", [1, 2, 7, 64, 1 << 20])
def test_concatenated_objects_split_exactly_at_any_chunk_boundary(monkeypatch, chunk):
    monkeypatch.setattr(records, "_CHUNK", chunk)
    objects = _objects(chunk, 60)
    rng = random.Random(chunk)
    texts = [json.dumps(o, ensure_ascii=False, indent=rng.choice([None, 2])) for o in objects]
    data = "".join(t + rng.choice(["", "", " ", "\n", "\r\n", "\n\n\t"]) for t in texts).encode()
    got = _split(data)
    assert [r[0] for r in got] == list(range(1, 61))
    assert [r[1] for r in got] == texts  # the exact bytes of each object, its inner whitespace kept
    assert [json.loads(r[1]) for r in got] == objects
    assert all(r[3] is None for r in got)


def test_concatenated_gzip_and_what_is_not_an_object():
    data = b'\xef\xbb\xbf{"a":1}{"b":"x}{y"} oops\n{"c":[1,2]}]]{"d":"\\"}"}{"cut":"of'
    got = _split(gzip.compress(data))
    assert [(r[1], r[3]) for r in got] == [
        ('{"a":1}', None),
        ('{"b":"x}{y"}', None),
        ("oops", None),  # not an object: a record, which the parse quarantines as malformed_json
        ('{"c":[1,2]}', None),
        ("]]", None),
        ('{"d":"\\"}"}', None),
        ('{"cut":"of', None),  # cut off by the end of the file: malformed_json too
    ]


def test_concatenated_long_invalid_and_truncated_records():
    fmt = RecordFormat("json_concatenated", 1024)
    long = json.dumps({"event_id": "long", "pad": "x" * 5000}).encode()
    bad_utf8 = b'{"event_id":"\xff"}'
    tail = b"".join(b'{"b":%d}' % i for i in range(3000))
    truncated = gzip.compress(b'{"a":1}' + long + bad_utf8 + tail)[:-40]
    got = list(iter_records(io.BytesIO(truncated), fmt))
    assert got[0][1:] == ('{"a":1}', None, None, None)
    assert got[1][3] == "line_too_long" and got[1][4] == f"{len(long)} bytes, over 1024"
    assert got[1][1] == long[:1024].decode()
    assert got[2][2] == bad_utf8 and got[2][3] == "invalid_utf8"
    assert got[-1][3] == "unreadable_file" and got[-1][0] == len(got)
    assert [r[1] for r in got[3:-1]] == [f'{{"b":{i}}}' for i in range(len(got) - 4)]
    assert 2000 < len(got) - 4 < 3000


def test_parquet_rows_are_json_records_and_a_corrupt_file_is_one_record(tmp_path):
    table = pa.table(
        {
            "event_id": ["a", "b"],
            "ts": pa.array(
                [datetime(2026, 10, 1, 1, 2, 3, 456000, tzinfo=UTC)] * 2, pa.timestamp("us", "UTC")
            ),
            "n": pa.array([1, None], pa.int64()),
            "context": [{"device": {"type": "tv"}}, {"device": {"type": None}}],
        }
    )
    path = tmp_path / "rows.parquet"
    pq.write_table(table, path, row_group_size=1)
    fmt = RecordFormat("parquet")
    got = list(iter_records(str(path), fmt))
    assert [json.loads(r[1]) for r in got] == [
        {
            "event_id": "a",
            "ts": "2026-10-01T01:02:03.456000+00:00",
            "n": 1,
            "context": {"device": {"type": "tv"}},
        },
        {
            "event_id": "b",
            "ts": "2026-10-01T01:02:03.456000+00:00",
            "n": None,
            "context": {"device": {"type": None}},
        },
    ]
    assert [r[0] for r in got] == [1, 2]
    # The same bytes through a stream that cannot seek (an S3 body) read alike.
    unseekable = io.BufferedReader(io.BytesIO(path.read_bytes()))
    unseekable.seekable = lambda: False
    assert list(iter_records(unseekable, fmt)) == got
    damaged = tmp_path / "damaged.parquet"
    damaged.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    (only,) = list(iter_records(str(damaged), fmt))
    assert only[0] == 1 and only[3] == "unreadable_file" and "after 0 records" in only[4]


def test_avro_records(tmp_path):
    import fastavro

    schema = fastavro.parse_schema(
        {
            "type": "record",
            "name": "Event",
            "fields": [
                {"name": "event_id", "type": "string"},
                {"name": "ts", "type": "long"},
                {"name": "amount", "type": ["null", "double"]},
            ],
        }
    )
    rows = [{"event_id": f"e{i}", "ts": 1_790_000_000_000 + i, "amount": i / 2 or None} for i in range(3)]
    path = tmp_path / "events.avro"
    with path.open("wb") as out:
        fastavro.writer(out, schema, rows)
    got = list(iter_records(str(path), RecordFormat("avro")))
    assert [json.loads(r[1]) for r in got] == rows
    path.write_bytes(path.read_bytes()[:-10])
    assert list(iter_records(str(path), RecordFormat("avro")))[-1][3] == "unreadable_file"
