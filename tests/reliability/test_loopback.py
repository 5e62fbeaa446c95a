"""Servers swarmkit starts listen on 127.0.0.1 only, and stop on their own.

The kernel's own socket table (/proc/net/tcp and tcp6) is the witness: it lists every
listening socket with the address it is bound to. (The embedded llama.cpp server's bind
is checked the same way in tests/provider/test_embedded.py.)
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from swarmkit.testing import FakeServer

pytestmark = pytest.mark.skipif(
    not Path("/proc/net/tcp").exists(), reason="reads the Linux socket table"
)

_LISTEN = "0A"
ROOT = Path(__file__).resolve().parents[2]


def listening_on(port: int) -> list[str]:
    """The addresses of every listening TCP socket on ``port`` (IPv4 and IPv6)."""
    found = []
    for table, family in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
        path = Path(table)
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            local, state = fields[1], fields[3]
            address, port_hex = local.split(":")
            if state != _LISTEN or int(port_hex, 16) != port:
                continue
            raw = bytes.fromhex(address)
            # The table prints each 32-bit word in host (little-endian) order.
            words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
            found.append(socket.inet_ntop(family, words))
    return found


def test_fake_server_listens_on_loopback_only() -> None:
    with FakeServer() as server:
        host, port = server.address
        assert host == "127.0.0.1"
        assert listening_on(port) == ["127.0.0.1"]
        assert server.base_url.startswith("http://127.0.0.1:")
    assert listening_on(port) == []  # and it let go of the port when stopped


def test_fake_server_command_listens_on_loopback_and_stops_when_its_stdin_closes() -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "swarmkit.testing", "--lifetime", "60"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
    ) as process:
        try:
            assert process.stdout is not None and process.stdin is not None
            ready = process.stdout.readline().split()
            assert ready[0] == "READY" and ready[1].startswith("http://127.0.0.1:")
            port = int(ready[1].rsplit(":", 1)[1].split("/")[0])
            assert listening_on(port) == ["127.0.0.1"]
            process.stdin.close()
            assert process.wait(timeout=20) == 0
        finally:
            if process.poll() is None:
                process.kill()
    assert listening_on(port) == []


def test_fake_server_stops_by_itself_when_its_lifetime_runs_out() -> None:
    server = FakeServer(lifetime=0.3).start()
    _, port = server.address
    assert server.wait_stopped(timeout=20)
    assert not server.running and listening_on(port) == []
