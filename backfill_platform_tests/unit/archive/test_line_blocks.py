"""The block reader of JSON lines gives exactly what the line reader gives, on plain and damaged files.

No Spark: `archive.line_blocks.plain_line_blocks` against `archive.records.iter_lines`, file by file, with
blocks small enough that lines and damage fall on every side of a block's edge.
"""

from __future__ import annotations

import gzip
import random

import pytest

from backfill_platform.pipeline.archive.line_blocks import plain_line_blocks
from backfill_platform.pipeline.archive.records import iter_lines

LIMIT = 100
_RANDOM = random.Random(7)
MANY = b"".join(b'{"i":%d,"s":"%s"}\n' % (i, b"q" * _RANDOM.randint(0, 60)) for i in range(3000))

FILES = {
    "plain": b'{"a":1}\n{"b":2}\n',
    "no final newline": b'{"a":1}\n{"b":2}',
    "CRLF, and a CR ending the file": b'{"a":1}\r\n{"b":2}\r\nx\r',
    "empty": b"",
    "blank lines": b"\n\n{}\n\n",
    "byte-order mark": b'\xef\xbb\xbf{"a":1}\n{"b":2}\n',
    "not UTF-8 in the middle": b'{"a":1}\n{"b":"\xff"}\n{"c":3}\n',
    "an encoded surrogate": b'{"a":"\xed\xa0\x80"}\n{"b":1}\n',
    "over the limit": b'{"a":1}\n{"x":"' + b"y" * 200 + b'"}\n{"c":3}\n',
    "at the limit, with and without CR": b"z" * LIMIT
    + b"\n"
    + b"w" * (LIMIT + 1)
    + b"\n"
    + b"v" * LIMIT
    + b"\r\n",
    "CRs inside lines": b'{"a":"\r"}\n\r\n\r\r\n',
    "many lines": MANY,
    "many lines, one bad byte late": MANY[:90_000] + b"\xc3(" + MANY[90_000:],
}


def _read(path: str, block_bytes: int) -> tuple[list[tuple], int]:
    """What the block reader yields, as `iter_lines` records, and how many lines came in blocks."""
    records, in_blocks = [], 0
    for item in plain_line_blocks(path, LIMIT, block_bytes=block_bytes):
        if isinstance(item[1], str):
            records.append(item)
            continue
        first, lines = item
        in_blocks += len(lines)
        records += [(first + i, text, None, None, None) for i, text in enumerate(lines.to_pylist())]
    return records, in_blocks


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("compressed", [False, True], ids=["plain text", "gzip"])
def test_blocks_read_what_lines_read(tmp_path, name, compressed):
    data = FILES[name]
    path = tmp_path / "hour.jsonl"
    path.write_bytes(gzip.compress(data) if compressed else data)
    expected = list(iter_lines(str(path), LIMIT))
    for block_bytes in (7, 64, 4096, 1 << 20) if len(data) < 1000 else (64, 4096, 1 << 20):
        records, in_blocks = _read(str(path), block_bytes)
        assert records == expected, (name, block_bytes)
        if name in ("plain", "many lines"):
            assert in_blocks == len(expected)  # a plain file never needs the line reader
        if name == "many lines, one bad byte late" and block_bytes == 4096:
            # The lines before the bad block came in blocks; the bad line is the line reader's.
            assert 0 < in_blocks < len(expected)
            assert any(record[3] == "invalid_utf8" for record in records)


def test_a_truncated_gzip_file_reads_its_intact_lines_then_names_the_damage(tmp_path):
    whole = gzip.compress(MANY)
    path = tmp_path / "hour.jsonl.gz"
    path.write_bytes(whole[: len(whole) // 2])
    expected = list(iter_lines(str(path), LIMIT))
    assert expected[-1][3] == "unreadable_file"
    for block_bytes in (64, 4096, 1 << 20):
        assert _read(str(path), block_bytes)[0] == expected
