"""Plain JSON-lines files read in the JVM (`archive.jvm_lines`) give exactly the Python reader's rows.

A corpus of files chosen to trip the JVM's reader: line ends, the line limit, UTF-8 at its edges, and gzip
streams the way writers and damage leave them (several members, padding, header fields, bytes after the
end, a cut or a wrong checksum). For each file: whatever the JVM calls plain, it reads to the same lines and
numbers as `records.iter_lines`, and nothing `iter_lines` finds a defect in is plain; then `read_lines` over
the whole corpus gives the same rows with the JVM as without it.
"""

from __future__ import annotations

import gzip
import random
import struct
import zlib
from datetime import UTC, datetime

import pytest

from backfill_platform.pipeline.archive.jvm_lines import plain_files, read_plain_lines
from backfill_platform.pipeline.archive.listing import ArchiveFile
from backfill_platform.pipeline.archive.readers import read_lines
from backfill_platform.pipeline.archive.records import RecordFormat, iter_lines

pytestmark = pytest.mark.both_spark_lines

LIMIT = 100
MANY = b"".join(b'{"i":%d,"s":"%s"}\n' % (i, b"q" * (i % 61)) for i in range(3000))


def _member(data: bytes, flags: int = 0, header_fields: bytes = b"", method: int = 8) -> bytes:
    """One gzip member written by hand: header (with `flags` and their fields), raw deflate, trailer."""
    deflate = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    body = deflate.compress(data) + deflate.flush()
    header = bytes([0x1F, 0x8B, method, flags]) + b"\0\0\0\0\0\xff" + header_fields
    return header + body + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)


_WHOLE = gzip.compress(MANY)
# name -> (the file's bytes, whether the JVM reads it: True plain, False the Python reader's)
CORPUS: dict[str, tuple[bytes, bool]] = {
    "plain": (b'{"a":1}\n{"b":2}\n', True),
    "no final newline": (b'{"a":1}\n{"b":2}', True),
    "CRLF, and a CR ending the file": (b'{"a":1}\r\n{"b":2}\r\nx\r', True),
    "empty": (b"", True),
    "one newline": (b"\n", True),
    "blank lines": (b"\n\n{}\n\n", True),
    "CRs inside lines": (b'{"a":"\r"}\n\r\n\r\r\n\r', True),
    "NUL and control bytes": (b'{"a":"\x00\x01\x1f"}\n\x00\n', True),
    "UTF-8 at its edges": (
        '{"a":"é€𝄞\U0010ffff\ufeff\ud7ff\ue000"}\n'.encode()
        + b'{"b":"\xc2\x80\xdf\xbf\xe0\xa0\x80\xf0\x90\x80\x80"}\n',
        True,
    ),
    "at the limit, with CR": (b"z" * LIMIT + b"\n" + b"v" * (LIMIT - 1) + b"\r\n", True),
    "many lines": (MANY, True),
    "gzip": (_WHOLE, True),
    "gzip, plain text named alike": (gzip.compress(b'{"a":1}\n') + b"", True),
    "gzip, two members": (gzip.compress(MANY[:5000]) + gzip.compress(MANY[5000:]), True),
    "gzip, an empty member": (gzip.compress(b"") + gzip.compress(b'{"a":1}\n'), True),
    "gzip, zero padding after": (_WHOLE + b"\0" * 37, True),
    "gzip, name, comment, extra field, header CRC": (
        _member(MANY[:9000], 2 | 4 | 8 | 16, b"\x04\0abcd" + b"hour.jsonl\0" + b"a comment\0" + b"\0\0"),
        True,
    ),
    "gzip, a member cut across its line": (gzip.compress(b'{"a":1}\n{"b"') + gzip.compress(b":2}\n"), True),
    "byte-order mark": (b'\xef\xbb\xbf{"a":1}\n{"b":2}\n', False),
    "byte-order mark, gzip": (gzip.compress(b'\xef\xbb\xbf{"a":1}\n'), False),
    "not UTF-8": (b'{"a":1}\n{"b":"\xff"}\n{"c":3}\n', False),
    "an encoded surrogate": (b'{"a":"\xed\xa0\x80"}\n', False),
    "an overlong form": (b'{"a":"\xc0\x80"}\n', False),
    "an overlong 3-byte form": (b'{"a":"\xe0\x80\x80"}\n', False),
    "above U+10FFFF": (b'{"a":"\xf4\x90\x80\x80"}\n', False),
    "cut inside a character at the end": (b'{"a":1}\n\xe2\x82', False),
    "CR before a bad byte": (b'{"a":1}\n\xff\r\n', False),
    "one byte over the limit": (b"z" * (LIMIT + 1) + b"\n", False),
    "over the limit, last line": (b'{"a":1}\n' + b"w" * (LIMIT + 1), False),
    "over the limit by its CR": (b"v" * LIMIT + b"\r\n", False),
    "gzip, cut": (_WHOLE[: len(_WHOLE) // 2], False),
    "gzip, cut in its trailer": (_WHOLE[:-3], False),
    "gzip, wrong CRC": (_WHOLE[:-8] + bytes([_WHOLE[-8] ^ 1]) + _WHOLE[-7:], False),
    "gzip, wrong length": (_WHOLE[:-1] + bytes([_WHOLE[-1] ^ 1]), False),
    "gzip, bytes after the end": (_WHOLE + b"trailing", False),
    "gzip, one magic byte after the end": (_WHOLE + b"\x1f", False),
    "gzip, not deflate": (_member(b'{"a":1}\n', method=7), False),
    "gzip, magic only": (b"\x1f\x8b", False),
    "gzip, corrupt data": (_WHOLE[:20] + b"\xff" * 40 + _WHOLE[60:], False),
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("jvm_lines")
    paths = {}
    for number, (name, (data, _)) in enumerate(CORPUS.items()):
        path = folder / f"{number:02d}.jsonl"
        path.write_bytes(data)
        paths[name] = str(path)
    return paths


@pytest.fixture(scope="module")
def verdicts(spark, corpus) -> dict[str, str | None]:
    return dict(zip(corpus, plain_files(spark, list(corpus.values()), LIMIT), strict=True))


def test_the_jvm_reads_exactly_the_plain_files(corpus, verdicts):
    expected = {name: plain for name, (_, plain) in CORPUS.items()}
    assert {name: why is None for name, why in verdicts.items()} == expected, verdicts
    for name, path in corpus.items():  # the invariant behind it: nothing with a defect is plain
        defects = [record[3] for record in iter_lines(path, LIMIT) if record[3] is not None]
        if verdicts[name] is None:
            assert defects == [], name
    assert "not UTF-8" in verdicts["not UTF-8"] and "longer than 100" in verdicts["one byte over the limit"]


def test_a_plain_file_s_lines_are_the_python_reader_s(spark, corpus, verdicts):
    plain = {index: corpus[name] for index, name in enumerate(corpus) if verdicts[name] is None}
    rows = read_plain_lines(spark, plain, LIMIT).collect()
    names = list(corpus)
    got = sorted((names[row["_file"]], row["_line_number"], row["line"]) for row in rows)
    expected = sorted(
        (name, record[0], record[1])
        for name in (names[i] for i in plain)
        for record in iter_lines(corpus[name], LIMIT)
    )
    assert got == expected
    assert len(got) > 9000  # the many-lines files are in it


def test_read_lines_gives_the_same_rows_with_the_jvm_and_without(spark, corpus):
    hour = datetime(2026, 10, 1, 5, tzinfo=UTC)
    files = [ArchiveFile(path, name, hour, 0, 0) for name, path in corpus.items()]
    fmt = RecordFormat("jsonl", LIMIT)

    def rows(jvm: bool) -> list[tuple]:
        found = [
            tuple(bytes(v) if isinstance(v, bytearray) else v for v in row)
            for row in read_lines(spark, files, fmt, jvm=jvm).collect()
        ]
        return sorted(found, key=repr)

    with_jvm, without = rows(True), rows(False)
    assert with_jvm == without
    assert {row[5] for row in without} >= {"invalid_utf8", "line_too_long", "unreadable_file"}


def test_long_lines_and_large_gzip_members_read_alike(spark, tmp_path):
    """Lines longer than the JVM reader's 1 MiB chunk (its buffer grows, then is reused for the next file of
    the task) and gzip members larger than its 64 KiB input buffer."""
    limit = 2 << 20
    rng = random.Random(11)

    def line(size: int) -> bytes:  # hex: barely compressible, so a member's bytes exceed the input buffer
        return rng.randbytes(size // 2).hex().encode()

    long_lines = line(1_500_000) + b'\n{"a":1}\r\n' + line(1_200_000) + b"\n"
    members = b"".join(gzip.compress(b"\n".join(line(200) for _ in range(800)) + b"\n") for _ in range(3))
    assert min(len(gzip.compress(long_lines)), len(members) // 3) > 64 << 10
    contents = [long_lines, members, gzip.compress(long_lines), b'{"short":1}\n'] * 3 + [line(limit + 2)]
    paths = []
    for number, data in enumerate(contents):
        path = tmp_path / f"{number:02d}.jsonl"
        path.write_bytes(data)
        paths.append(str(path))
    verdicts = plain_files(spark, paths, limit)
    assert [why is None for why in verdicts] == [True] * 12 + [False]
    rows = read_plain_lines(spark, dict(enumerate(paths[:12])), limit).collect()
    got = sorted((row["_file"], row["_line_number"], row["line"]) for row in rows)
    expected = sorted((i, r[0], r[1]) for i, path in enumerate(paths[:12]) for r in iter_lines(path, limit))
    assert got == expected and len(got) == 3 * (3 + 2400 + 3 + 1)
