"""The planner's response_format ladder against the servers people point swarmkit at.

Real openai client → FakeServer, scripted to refuse structured output the way each
server does (status and body as they send them; see swarmkit/ladder.py) and to answer
with the junk small models give. Each test asserts the rungs as the server saw them,
in order, and the plan the run went on with.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

import swarmkit
from swarmkit.api.result import Run
from swarmkit.engine.ladder import forget_rungs
from swarmkit.testing import FakeReply, FakeRequest, FakeServer, Fault, default_reply, run_problems
from tests.support.fakekey import Options

Reply = FakeReply | Fault
TASK = "Explain four planets: Mercury, Venus, Earth and Mars."
PLANETS = ["Explain Mercury", "Explain Venus", "Explain Earth", "Explain Mars"]
PLANETS_JSON = json.dumps({"tasks": PLANETS})
PLANETS_LIST = (
    "Here is the plan:\n1. Explain Mercury\n2. Explain Venus\n3. Explain Earth\n4. Explain Mars"
)

LLAMA_CPP_PYTHON = Fault.format_refusal("llama-cpp-python")
LLAMA_SERVER = Fault.format_refusal("llama-server")
LM_STUDIO = Fault.format_refusal("lm-studio")
VLLM = Fault.format_refusal("vllm")
LITELLM = Fault.format_refusal("litellm")


def rung(request: FakeRequest) -> str:
    """The ladder rung a planner request is on."""
    form = request.response_format
    if form is None:
        return "text"
    if form.get("type") == "json_object" and "schema" in form:
        return "json_object+schema"
    return str(form.get("type"))


Script = Callable[[str, int], Reply]  # (rung, how many planner requests came before) → reply


def _run(options: Options, script: Script, *, model: str = "small-model",
         server: FakeServer | None = None) -> tuple[Run, list[str]]:
    seen: list[str] = []

    def handler(request: FakeRequest) -> Reply:
        if request.step != "planner":
            return default_reply(request)
        seen.append(rung(request))
        return script(seen[-1], len(seen) - 1)

    def go(target: FakeServer) -> Run:
        target.handler = handler
        return swarmkit.run_sync(TASK, **options(target, model=model, workers=4))

    if server is not None:
        return go(server), seen
    with FakeServer() as own:
        return go(own), seen


@pytest.fixture(autouse=True)
def _fresh_ladder() -> None:
    forget_rungs()


def _completed_with(run: Run, plan: list[str]) -> None:
    assert run.status == "completed", run.error
    assert run.plan == plan
    assert [w.task for w in run.workers] == plan
    assert run_problems(run) == []


# -- each server's refusal ------------------------------------------------------------


@pytest.mark.parametrize("refusal", [LLAMA_CPP_PYTHON, LLAMA_SERVER], ids=["llama-cpp-python",
                                                                           "llama-server"])
def test_llama_cpp_500_on_json_schema_goes_to_json_object_with_the_schema(
    refusal: Fault, options: Options
) -> None:
    def script(step: str, _: int) -> Reply:
        return refusal if step == "json_schema" else FakeReply(PLANETS_JSON)

    run, seen = _run(options, script)
    assert seen == ["json_schema", "json_object+schema"]  # one request each: no retry of the 500
    _completed_with(run, PLANETS)
    refused = run.calls[0]
    assert refused.step == "planner" and refused.attempts == 1 and refused.status == 500
    assert refused.error is not None
    assert "does not accept response_format 'json_schema'" in refused.error


def test_lm_studio_400_on_json_object_goes_to_plain_text(options: Options) -> None:
    # It takes json_schema, but the model fills it with the schema's own placeholders.
    def script(step: str, _: int) -> Reply:
        if step == "json_schema":
            return FakeReply('{"tasks": ["...", "..."]}')
        return LM_STUDIO if step.startswith("json_object") else FakeReply(PLANETS_LIST)

    run, seen = _run(options, script)
    assert seen == ["json_schema", "json_schema", "json_object+schema", "json_object", "text"]
    _completed_with(run, PLANETS)


def test_vllm_400_on_a_schema_it_cannot_compile_goes_to_json_object(options: Options) -> None:
    # json_object without grammar support: "{}" first, the plan after the repair.
    def script(step: str, count: int) -> Reply:
        if step == "json_schema":
            return VLLM
        return FakeReply("{}" if count == 1 else PLANETS_JSON)

    run, seen = _run(options, script)
    assert seen == ["json_schema", "json_object+schema", "json_object+schema"]
    _completed_with(run, PLANETS)


def test_litellm_400_on_any_response_format_goes_down_to_plain_text(options: Options) -> None:
    def script(step: str, _: int) -> Reply:
        return FakeReply(PLANETS_JSON) if step == "text" else LITELLM

    run, seen = _run(options, script)
    assert seen == ["json_schema", "json_object+schema", "json_object", "text"]
    _completed_with(run, PLANETS)
    assert [c.status for c in run.calls if c.step == "planner"] == [400, 400, 400, None]


def test_ollama_ignoring_the_format_is_read_as_a_list_on_the_text_rung(options: Options) -> None:
    # Older Ollama drops json_schema silently: the model answers prose on every rung.
    run, seen = _run(options, lambda step, _: FakeReply(PLANETS_LIST))
    assert seen == ["json_schema", "json_schema", "json_object+schema", "json_object+schema",
                    "text"]
    _completed_with(run, PLANETS)


# -- junk plans are not plans -----------------------------------------------------------


JUNK = {
    "empty-object": "{}",
    "repair-example": '{"tasks": ["...", "..."]}',
    "prompt-example": '{"tasks": ["sub-task 1", "sub-task 2"]}',
    "placeholders": '{"tasks": ["task 1", "Step 2", "TODO", "<task>", " "]}',
    "echo": json.dumps({"tasks": [TASK, TASK.upper()]}),
    "echo-list": f"1. {TASK}",
}


@pytest.mark.parametrize("name", list(JUNK))
def test_junk_plans_move_down_the_ladder_instead_of_completing(
    name: str, options: Options
) -> None:
    # The llama-cpp-python path from the issue: json_schema refused, then junk on json_object
    # (answer and repair), then a real list on plain text.
    def script(step: str, _: int) -> Reply:
        if step == "json_schema":
            return LLAMA_CPP_PYTHON
        return FakeReply(JUNK[name] if step != "text" else PLANETS_LIST)

    run, seen = _run(options, script)
    assert seen == ["json_schema", "json_object+schema", "json_object+schema", "text"]
    _completed_with(run, PLANETS)


@pytest.mark.parametrize("name", list(JUNK))
def test_junk_on_every_rung_is_a_plan_error_not_a_completed_run(
    name: str, options: Options
) -> None:
    run, seen = _run(options, lambda step, _: FakeReply(JUNK[name]))
    assert seen == ["json_schema"] * 2 + ["json_object+schema"] * 2 + ["text"] * 2
    assert run.status == "failed" and run.workers == [] and run.plan == []
    assert run.error is not None and run.error.startswith("PlanError: ")
    assert "\n" not in run.error
    assert run.plan_raw == JUNK[name]


def test_placeholders_and_repeats_among_real_tasks_are_left_out(options: Options) -> None:
    tasks = ["sub-task 1", "Explain Mars", "...", "explain mars.", "Explain Venus"]
    reply = json.dumps({"tasks": tasks})
    run, seen = _run(options, lambda step, _: FakeReply(reply))
    assert seen == ["json_schema"]
    _completed_with(run, ["Explain Mars", "Explain Venus"])


def test_list_markers_inside_json_tasks_are_dropped(options: Options) -> None:
    reply = json.dumps({"tasks": ["1. Explain Mercury", "2) Explain Venus", "- Explain Earth"]})
    run, _ = _run(options, lambda step, _: FakeReply(reply))
    _completed_with(run, ["Explain Mercury", "Explain Venus", "Explain Earth"])


# -- the rung that worked is remembered -------------------------------------------------


def test_later_runs_start_at_the_rung_that_worked_for_that_endpoint_and_model(
    options: Options,
) -> None:
    def script(step: str, _: int) -> Reply:
        return FakeReply(PLANETS_JSON) if step == "text" else LITELLM

    with FakeServer() as server:
        first, seen_first = _run(options, script, server=server)
        again, seen_again = _run(options, script, server=server)
        other, seen_other = _run(options, script, server=server, model="another-model")
    assert seen_first == ["json_schema", "json_object+schema", "json_object", "text"]
    assert seen_again == ["text"]  # no refusals paid twice
    assert seen_other == seen_first  # another model at the same URL learns for itself
    for run in (first, again, other):
        _completed_with(run, PLANETS)


def test_a_remembered_rung_that_stops_working_goes_on_down(options: Options) -> None:
    with FakeServer() as server:
        _run(options, lambda step, _: LLAMA_CPP_PYTHON if step == "json_schema"
             else FakeReply(PLANETS_JSON), server=server)
        run, seen = _run(options, lambda step, _: FakeReply(PLANETS_LIST if step == "text"
                                                            else "{}"), server=server)
    assert seen == ["json_object+schema", "json_object+schema", "text"]
    _completed_with(run, PLANETS)


def test_replay_asks_the_rungs_the_recording_asked_whatever_this_session_learnt(
    options: Options, tmp_path: Path
) -> None:
    def script(step: str, _: int) -> Reply:
        return FakeReply(PLANETS_JSON) if step == "text" else LITELLM

    from_top, from_text = str(tmp_path / "top.swarm.json"), str(tmp_path / "text.swarm.json")
    with FakeServer() as server:
        server.handler = lambda request: (script(rung(request), 0) if request.step == "planner"
                                          else default_reply(request))
        recorded_top = swarmkit.run_sync(TASK, **options(server, model="m", record=from_top))
        # This session now starts at text: recorded so, that run asks one planner request.
        recorded_text = swarmkit.run_sync(TASK, **options(server, model="m", record=from_text))
        assert [c.step for c in recorded_text.calls].count("planner") == 1
        replayed_top = swarmkit.run_sync(TASK, **options(server, model="m", replay=from_top))
        forget_rungs()  # a new session, which never saw this server
        replayed_text = swarmkit.run_sync(TASK, **options(server, model="m", replay=from_text))
    for recorded, replayed in ((recorded_top, replayed_top), (recorded_text, replayed_text)):
        assert replayed.status == "completed", replayed.error
        assert replayed.plan == recorded.plan == PLANETS
        assert [c.step for c in replayed.calls] == [c.step for c in recorded.calls]
        assert {c.source for c in replayed.calls} == {"replay"}
