"""Which model answered is never a guess: the spend by role names each role's model, and
a run whose ``auto`` fell back to the embedded model says so in one line, in the static
output (text and HTML), its replay and the live view."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import swarmkit
from swarmkit.api.entry import resolve_models
from swarmkit.config.automodel import EMBEDDED_MODEL_NAME, auto_notice
from swarmkit.config.swarmconfig import ROLES, SwarmConfig
from swarmkit.display.livehtml import render_section
from swarmkit.display.livestate import LiveState
from swarmkit.record.events import RunStarted
from swarmkit.testing import FakeServer
from tests.support.fakekey import KEY_ENV

pytestmark = pytest.mark.usefixtures("fake_key")

NOTICE = (f"model: local (embedded {EMBEDDED_MODEL_NAME}; no OPENAI_API_KEY set, so auto "
          "chose it)")



def test_the_spend_by_role_names_each_roles_model_in_text_and_html() -> None:
    with FakeServer(plan_tasks=2) as server:
        run = swarmkit.run_sync("Name two lakes", base_url=server.base_url,
                                api_key_env=KEY_ENV, history=False, planner_model="gpt-4.1",
                                worker_model="gpt-4.1-mini", reducer_model="gpt-4.1-nano")
    tables = run.tables()
    assert tables.role_headers[-1] == "model"
    assert [(row[0], row[-1]) for row in tables.role_rows()] == [
        ("planner", "gpt-4.1"), ("workers", "gpt-4.1-mini"), ("reducer", "gpt-4.1-nano"),
        ("total", "")]
    role_table = tables.text().split("by role\n", 1)[1].split("\n\n", 1)[0]
    assert role_table.splitlines()[0].split()[-1] == "model"
    assert role_table.splitlines()[2].split()[-1] == "gpt-4.1"
    assert "<td>gpt-4.1-nano</td>" in tables.html()
    assert auto_notice(run.config) is None and NOTICE not in tables.text()


def test_auto_with_a_key_or_a_base_url_stays_hosted_and_says_nothing() -> None:
    keyed = resolve_models(SwarmConfig(), {"OPENAI_API_KEY": "sk-x"})
    assert keyed.models == dict.fromkeys(ROLES, "gpt-4.1-mini") and keyed.auto_local == ()
    based = resolve_models(SwarmConfig().with_options(base_url="http://127.0.0.1:9/v1"), {})
    assert based.auto_local == () and auto_notice(based.summary()) is None
    assert "auto_local" not in based.summary()  # a run's recorded config reads as before


@pytest.mark.local
def test_auto_without_a_key_resolves_to_the_embedded_model_and_records_why() -> None:
    config = resolve_models(SwarmConfig(), {})
    assert config.models == dict.fromkeys(ROLES, "local")
    assert config.auto_local == ROLES
    assert auto_notice(config.summary()) == NOTICE


def test_the_notice_names_the_roles_and_key_variables_auto_sent_to_the_embedded_model(
) -> None:
    summary = SwarmConfig().with_options(api_key_env="MY_KEY,OTHER_KEY").summary()
    assert auto_notice(summary) is None
    summary["auto_local"] = ["planner", "reducer"]
    assert auto_notice(summary) == (
        f"planner and reducer model: local (embedded {EMBEDDED_MODEL_NAME}; no MY_KEY or "
        "OTHER_KEY set, so auto chose it)")


def local_config(server: FakeServer, **extra: Any) -> SwarmConfig:
    """A run on a stand-in for the embedded model, recorded as auto's fallback to it (what
    resolve_models records when no key is set) without starting the real server."""
    config = SwarmConfig.from_options(model="local", base_url=server.base_url,
                                      history=False, **extra)
    return replace(config, auto_local=ROLES)


def test_a_run_auto_sent_to_the_embedded_model_says_so_under_its_totals_and_in_replay(
    tmp_path: Path,
) -> None:
    cassette = tmp_path / "local.swarm.json"
    with FakeServer(plan_tasks=2) as server:
        run = swarmkit.run_sync("Name two lakes",
                                config=local_config(server, record=str(cassette)))
    assert run.config["auto_local"] == list(ROLES)
    text = run.tables().text()
    assert text.splitlines()[:2] == [run.tables().totals(), NOTICE]
    page = run.tables().html()
    assert page.index(run.tables().totals()) < page.index(f'<p class="sk-note">{NOTICE}</p>')
    # The replay (and so an exported notebook) says it too, with no key and no server.
    replayed = swarmkit.run_sync("Name two lakes", replay=str(cassette), model="local",
                                 history=False)
    assert replayed.tables().mime_bundle()[0] == run.tables().mime_bundle()[0]


def test_the_live_header_says_auto_chose_the_embedded_model() -> None:
    config = SwarmConfig.from_options(model="local")
    state = LiveState(task="t", config=config)
    assert NOTICE not in render_section(state, "header")
    summary = {**replace(config, auto_local=ROLES).summary()}
    state.apply(RunStarted("r1", "t", summary, "2026-01-01T00:00:00+00:00"))
    assert f'<span class="sk-note">{NOTICE}</span>' in render_section(state, "header")
