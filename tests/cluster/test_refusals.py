"""What a cluster run refuses, each in one line, before anything starts (no Ray needed:
these run whether or not the ray extra is installed)."""

from __future__ import annotations

import sys
from functools import partial

import pytest

import swarmkit
from swarmkit.errors import ConfigError
from swarmkit.testing import FakeServer
from tests.support.fakekey import run_options

pytestmark = pytest.mark.usefixtures("fake_key")

options = partial(run_options, history=False)


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

