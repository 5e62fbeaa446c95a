"""What a cluster run refuses, each in one line, before anything starts (no Ray needed:
these run whether or not the ray extra is installed)."""

from __future__ import annotations

import importlib
import sys
import threading
from functools import partial
from typing import Any

import pytest

import swarmkit
from swarmkit.errors import ConfigError
from swarmkit.testing import FakeServer
from tests.support.fakekey import run_options

pytestmark = pytest.mark.usefixtures("fake_key")

options = partial(run_options, history=False)
# The module (its name is also the function swarmkit.cluster re-exports).
connect_module = importlib.import_module("swarmkit.cluster.connect")


@pytest.mark.parametrize(("value", "said"), [
    ("spark", "cluster must be 'ray', 'ray:auto' or 'ray://HOST:PORT', got 'spark'"),
    ("ray://nohost", "got 'ray://nohost'"),
    ("ray://head:99999", "got 'ray://head:99999'"),
])
def test_a_bad_cluster_is_one_line(value: str, said: str) -> None:
    with pytest.raises(ConfigError, match=said.replace("(", r"\(").replace(")", r"\)")) as info:
        swarmkit.run_sync("x", **options(None, cluster=value))
    assert "\n" not in str(info.value)


def test_shards_must_be_at_least_one() -> None:
    with pytest.raises(ConfigError, match="shards must be at least 1, got 0"):
        swarmkit.run_sync("x", **options(None, cluster="ray", shards=0))


def test_without_the_extra_a_cluster_names_the_install(monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # what `import ray` meets uninstalled
    with FakeServer() as server, pytest.raises(ConfigError) as info:
        swarmkit.run_sync("x", **options(server, cluster="ray", tasks=["a"]))
    assert str(info.value) == 'cluster: Ray is not installed; pip install "jupyter-swarmkit[ray]"'
    assert server.count() == 0


def test_mcp_servers_are_refused_on_a_cluster() -> None:
    with FakeServer() as server, pytest.raises(ConfigError, match="MCP servers are not "
                                               "started on the shards"):
        swarmkit.run_sync("x", **options(server, cluster="ray", tasks=["a"],
                                         mcp_servers={"shop": ["python", "-V"]}))
    assert server.count() == 0


def test_a_run_in_one_process_writes_no_cluster_keys() -> None:
    config = swarmkit.SwarmConfig()
    summary = config.summary()
    assert "cluster" not in summary and "shards" not in summary
    sharded = config.with_options(cluster="ray:auto", shards=3).summary()
    assert (sharded["cluster"], sharded["shards"]) == ("ray:auto", 3)


def test_a_tree_is_refused_on_a_cluster_before_any_call() -> None:
    with FakeServer() as server, pytest.raises(ConfigError) as info:
        swarmkit.run_sync("x", **options(server, cluster="ray", depth=2))
    assert str(info.value) == ("cluster: a tree (depth > 1) runs in one process for now; "
                               "give depth=1 to shard the workers, or drop cluster to run "
                               "the tree")
    assert server.count() == 0



class HangingRay:
    """What Ray Client does after a failed connection: ``init`` never returns (it waits
    for its log stream as it cleans up)."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def init(self, **options: Any) -> None:
        self.release.wait(30)


class RefusingRay:
    """``init`` raises as Ray Client does when its server could not start a process."""

    def init(self, **options: Any) -> None:
        raise ConnectionError("Initialization failure from server:\nTraceback (most recent "
                              "call last):\n  File \"proxier.py\", line 1\nRuntimeError: "
                              "Starting Ray client server failed.")


def test_a_ray_that_never_answers_is_one_line_after_the_wait(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connect_module, "CONNECT_WAIT", 0.2)
    ray = HangingRay()
    try:
        with pytest.raises(ConfigError) as info:
            connect_module._start(ray, "ray:auto")  # type: ignore[arg-type]
    finally:
        ray.release.set()
    assert str(info.value) == ("cluster=ray:auto: cannot reach Ray (no answer in 0.2 s); "
                               "start one with `ray start --head`, or use cluster='ray'")


def test_ray_clients_server_traceback_is_cut_to_its_error() -> None:
    with pytest.raises(ConfigError) as info:
        connect_module._start(RefusingRay(), "ray:auto")  # type: ignore[arg-type]
    assert str(info.value) == (
        "cluster=ray:auto: cannot reach Ray (Initialization failure from server: "
        "RuntimeError: Starting Ray client server failed.); start one with `ray start "
        "--head`, or use cluster='ray'")


class BornDead:
    """Ray Client whose server's process for its first ``deaths`` clients dies at birth."""

    def __init__(self, deaths: int) -> None:
        self.deaths, self.tries = deaths, 0

    def init(self, **options: Any) -> None:
        self.tries += 1
        if self.tries <= self.deaths:
            raise ConnectionError("Initialization failure from server:\nTraceback (most "
                                  "recent call last):\nRuntimeError: Starting Ray client "
                                  "server failed. See ray_client_server_23000.err.")


def test_ray_client_is_asked_again_when_its_server_could_not_start_a_process(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connect_module, "_token_mode_when_a_token_is_at_hand", lambda: None)
    ray = BornDead(1)
    connect_module._start(ray, "ray://127.0.0.1:1")  # type: ignore[arg-type]
    assert ray.tries == 2
    refused = BornDead(2)  # twice: refused in one line
    with pytest.raises(ConfigError, match=r"^cluster=ray://127.0.0.1:1: cannot reach Ray "
                       r"\(Initialization failure from server: RuntimeError: Starting Ray "):
        connect_module._start(refused, "ray://127.0.0.1:1")  # type: ignore[arg-type]
    assert refused.tries == 2
