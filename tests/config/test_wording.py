"""Counts and types read as English everywhere a person reads them: ``1 worker``,
``1 call``, ``1 recent run``, ``1 attempt``, ``an int`` (they said ``1 workers``,
``1 calls``, ``a int``)."""

from __future__ import annotations

from pathlib import Path

import pytest

import swarmkit
from swarmkit.config.wording import counted, kind_of
from swarmkit.display import RunListing
from swarmkit.errors import ConfigError
from swarmkit.store import History
from swarmkit.store.writethread import wait_for_writes
from swarmkit.testing import FakeServer
from tests.support.fakekey import run_options

pytestmark = pytest.mark.usefixtures("fake_key")


@pytest.mark.parametrize(("count", "noun", "said"), [
    (0, "call", "0 calls"), (1, "call", "1 call"), (2, "call", "2 calls"),
    (1, "tool call", "1 tool call"), (3, "tool call", "3 tool calls"),
    (1, "sub-task", "1 sub-task"), (4, "sub-task", "4 sub-tasks"),
    (2, "batch", "2 batches"), (1, "recent run", "1 recent run"),
])
def test_a_count_takes_the_singular_for_exactly_one(count: int, noun: str, said: str) -> None:
    assert counted(count, noun) == said


@pytest.mark.parametrize(("value", "said"), [
    (3, "an int"), ("x", "a str"), ([1], "a list"), ({}, "a dict"), (None, "a NoneType"),
    (object(), "an object"),
])
def test_a_type_takes_its_article(value: object, said: str) -> None:
    assert kind_of(value) == said


def test_a_one_worker_run_and_its_listing_speak_in_the_singular(tmp_path: Path) -> None:
    history = tmp_path / "h.db"
    with FakeServer(plan_tasks=1) as server:
        run = swarmkit.run_sync("task", **run_options(server, history_path=str(history)))
    text = run.tables().text()
    assert f"run {run.run_id} · completed · 1 worker (1 completed) · 3 calls · " in text
    assert "<Run" in repr(run) and "1 worker," in repr(run)
    wait_for_writes()
    with History(history) as opened:
        listing = RunListing(opened.recent(5), str(history))
    assert listing.text().startswith(f"1 recent run in {history}")


def test_a_wrong_item_type_is_named_with_its_article() -> None:
    with pytest.raises(ConfigError, match="is an int"):
        swarmkit.run_sync("task", tasks=["fine", 7], model="gpt-4.1-mini")
