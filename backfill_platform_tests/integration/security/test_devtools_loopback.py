"""Development tools listen on loopback unless told otherwise (issue 59, part 8): the REST catalog server is
unauthenticated, so `make rest-catalog` (and the tests' `rest_catalog`) bind 127.0.0.1, as `make ui` and `make
kafka` do. Read from the kernel's own table of listening sockets (/proc/net/tcp, tcp6), not from the log."""

from __future__ import annotations

from pathlib import Path

import pytest

from backfill_platform.devtools.rest_catalog.server import rest_catalog_server
from backfill_platform_tests.support.hostile import nothing_outside  # noqa: F401 - an autouse fixture

LISTEN = "0A"
IPV4_LOOPBACK = "0100007F"  # 127.0.0.1 as /proc/net/tcp writes it
IPV6_LOOPBACK = "00000000000000000000000001000000"  # ::1
MAPPED_IPV4_LOOPBACK = "0000000000000000FFFF00000100007F"  # ::ffff:127.0.0.1


def listening_addresses(port: int) -> list[str]:
    """The local addresses (as /proc/net writes them) of every socket listening on `port`."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            address, hex_port = fields[1].split(":")
            if fields[3] == LISTEN and int(hex_port, 16) == port:
                found.append(address)
    return found


@pytest.mark.timeout(180)
def test_the_rest_catalog_server_listens_on_loopback_only(tmp_path):
    with rest_catalog_server(tmp_path / "state", f"file://{tmp_path / 'warehouse'}") as server:
        addresses = listening_addresses(server.port)
    assert server.host == "127.0.0.1" and server.uri == f"http://127.0.0.1:{server.port}"
    assert addresses, "no socket listens on the server's port"
    assert set(addresses) <= {IPV4_LOOPBACK, IPV6_LOOPBACK, MAPPED_IPV4_LOOPBACK}, addresses
