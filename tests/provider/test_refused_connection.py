"""A connection nothing accepts is called refused, with the fix (check the base URL or
start the server), not "connection dropped ... [Errno 111]"; and the attempts it gave
up after are counted in English."""

from __future__ import annotations

import socket

import pytest

import swarmkit

pytestmark = pytest.mark.usefixtures("fake_key")


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("attempts", [1, 2])
def test_a_refused_connection_says_refused_and_what_to_check(attempts: int) -> None:
    port = closed_port()
    run = swarmkit.run_sync("task", model="gpt-4.1-mini", base_url=f"http://127.0.0.1:{port}/v1",
                            max_attempts=attempts, backoff_base=0.01, history=False)
    tries = "1 attempt" if attempts == 1 else "2 attempts"
    assert run.status == "failed"
    assert run.error == (
        f"ProviderError: connection refused by 127.0.0.1:{port} (gave up after {tries}); "
        "nothing listens at that address: check the base URL, or start the server first")
    assert "Errno" not in (run.error or "") and "dropped" not in (run.error or "")
