"""The Python front end: ``swarmkit.run`` (async) and ``swarmkit.run_sync``.

Both take the public option names (``model=``, ``workers=``, ``concurrency=``,
``budget_usd=``/``budget=``, ``base_url=``, ``api_key_env=``, per-role
``planner_model=`` ...) and return a :class:`~swarmkit.api.result.Run`.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from types import ModuleType
from typing import Any, Protocol, runtime_checkable

from ..cluster import ClusterDispatch, connect, refuse_unshardable, shard_env
from ..config.options import TOOL_CHOICE_KEYS
from ..config.prompts import (
    DEFAULT_PLANNER_PROMPT,
    DEFAULT_REDUCER_PROMPT,
    DEFAULT_SYSTEM_PROMPT,
    LOCAL_PLANNER_PROMPT,
    LOCAL_REDUCER_PROMPT,
    LOCAL_SYSTEM_PROMPT,
)
from ..config.swarmconfig import (
    AUTO_MODEL,
    DEFAULT_MODEL,
    LOCAL_MODEL,
    ROLES,
    RoleConfig,
    SwarmConfig,
)
from ..config.wording import kind_of
from ..engine.background import run_blocking
from ..engine.budget import Budget
from ..engine.engine import Engine, resumed_task
from ..engine.modelcaller import ModelCaller, RunCaller
from ..errors import ConfigError, SwarmError
from ..provider import OpenAIProvider
from ..provider.batchclient import BatchClient
from ..provider.embedded import resolve_local
from ..provider.sharedcalls import SharedCalls
from ..record.events import Sink
from ..record.modelcall import CallOutcome, ChatRequest, ToolKey, ToolOutcome
from ..record.rows import BatchRecord
from ..record.runrecord import RunRecord
from ..store import CallStore, Cassette
from ..store.history import History
from ..store.replayconfig import with_recorded_requests
from ..telemetry import span_sinks
from ..tools import build_worker_loop, tree_loop
from ..tools.standins import replay_worker_loop
from .result import Run

__all__ = ["LiveCaller", "Planned", "check_resumable", "create_engine", "load_run", "plan_of",
           "resolve_models", "resumed_config", "run", "run_sync", "stored_batches"]


class LiveCaller:
    """A RunCaller that always asks the provider (no cache, no cassette)."""

    def __init__(self, provider: ModelCaller) -> None:
        self.provider = provider

    async def complete(self, request: ChatRequest, **context: Any) -> CallOutcome:
        return await self.provider.complete(request, **context)

    async def tool(
        self, key: ToolKey, execute: Callable[[], Awaitable[ToolOutcome]]
    ) -> ToolOutcome:
        return await execute()

    async def aclose(self) -> None:
        await self.provider.aclose()


def _has_key(role: RoleConfig, env: Mapping[str, str]) -> bool:
    return bool(role.keys_set(env))


def resolve_models(config: SwarmConfig, env: Mapping[str, str]) -> SwarmConfig:
    """Turn ``auto`` into a real model and point ``local`` roles at the embedded server.

    ``auto`` is the hosted default when a key or base URL is configured, and the
    embedded local model otherwise, so a newcomer with no key still gets a real swarm;
    the roles it sent to the embedded model are ``auto_local``, which every view of the
    run states in one line (``config.automodel.auto_notice``).
    """
    roles: dict[str, RoleConfig] = {}
    auto_local: list[str] = []
    for name in ROLES:
        role = config.role(name)
        if role.model == AUTO_MODEL:
            hosted = role.base_url is not None or _has_key(role, env)
            role = replace(role, model=DEFAULT_MODEL if hosted else LOCAL_MODEL)
            if not hosted:
                auto_local.append(name)
        if role.is_local and role.base_url is None:
            role = resolve_local(role, slots=config.concurrency)
        roles[name] = role
    config = replace(config, **_resolved_judge(config, env),
                     auto_local=tuple(auto_local) or config.auto_local)
    return replace(config, **roles, **_local_prompts(config, roles))


# The prompt each role's default becomes on a small local model, by its config field.
_LOCAL_PROMPTS = {
    "planner": ("planner_prompt", DEFAULT_PLANNER_PROMPT, LOCAL_PLANNER_PROMPT),
    "worker": ("system_prompt", DEFAULT_SYSTEM_PROMPT, LOCAL_SYSTEM_PROMPT),
    "reducer": ("reducer_prompt", DEFAULT_REDUCER_PROMPT, LOCAL_REDUCER_PROMPT),
}


def _local_prompts(config: SwarmConfig, roles: Mapping[str, RoleConfig]) -> dict[str, str]:
    """The local models' prompts for the roles that run on one and kept the default
    prompt (a prompt the user gave is theirs); the run records what was sent."""
    changed: dict[str, str] = {}
    for name, (field_name, default, local) in _LOCAL_PROMPTS.items():
        if roles[name].is_local and getattr(config, field_name) == default:
            changed[field_name] = local
    return changed


def _resolved_judge(config: SwarmConfig, env: Mapping[str, str]) -> dict[str, Any]:
    """The judge's fields with its model resolved like a role's and its endpoint pinned:
    an inherited endpoint is the reducer's as given, never the embedded server the
    reducer's ``local`` model may be pointed at below."""
    if config.judge is None:
        return {}
    role = config.role("judge")
    if role.model == AUTO_MODEL:
        hosted = role.base_url is not None or _has_key(role, env)
        role = replace(role, model=DEFAULT_MODEL if hosted else LOCAL_MODEL)
    if role.is_local and config.judge_base_url is None:
        role = resolve_local(replace(role, base_url=None), slots=config.concurrency)
    return {"judge": role.model, "judge_base_url": role.base_url,
            "judge_api_key_env": role.api_key_env}


async def create_engine(
    *,
    config: SwarmConfig | None = None,
    sinks: Sequence[Sink] = (),
    caller: RunCaller | None = None,
    env: Mapping[str, str] | None = None,
    shared_budget: Budget | None = None,
    shared: SharedCalls | None = None,
    task: str | None = None,
    **options: Any,
) -> Engine:
    """Build an Engine ready to ``execute``; starts the local model server if needed.

    Without ``caller`` the engine gets a :class:`~swarmkit.store.CallStore` built from
    the config: ``cache`` (off by default here, on in a notebook session), ``record``,
    ``replay`` (no provider is built: replay cannot reach the network) and ``history``.

    ``tools=[...]`` (``@swarmkit.tool`` functions) and ``mcp_servers={"name": ["cmd",
    ...]}`` give the workers a tool loop (``swarmkit.tools``); ``mcp_tools=`` /
    ``mcp_exclude_tools=`` (``NAME__tool`` names) narrow the servers' tools.
    ``tracer_provider=`` (an OpenTelemetry TracerProvider) receives the run's spans
    instead of the global one. ``checks=[...]`` (``swarmkit.Check``s or functions) score
    the answer after the reducer, before the judge (``judge=MODEL``).

    ``Plan.run_options`` adds ``review=`` (the PlanReview of the given tasks),
    ``carried=`` (the planner's calls, as the plan's store recorded them: the run's
    store answers them as then, see ``CallStore.carry``), ``run_id=`` and
    ``started_at=`` (the plan's: its ``planned`` history row becomes the run). A given
    ``caller`` cannot answer carried calls: they are left out, and so are the plan's id
    and date (a comparison's variants).
    """
    env = os.environ if env is None else env
    tools, mcp_servers = options.pop("tools", None), options.pop("mcp_servers", None)
    mcp_choice = {key: options.pop(key) for key in TOOL_CHOICE_KEYS if key in options}
    plan_from = options.pop("plan_from", None)
    tracer_provider = options.pop("tracer_provider", None)
    resume = options.pop("resume", None)
    checks = tuple(options.pop("checks", None) or ())
    review = options.pop("review", None)  # Plan.run's: the tasks are a reviewed plan
    # Plan.run's too: the planner's calls the run takes over, and the plan's id and date.
    carried = tuple(options.pop("carried", None) or ())
    taken = {key: options.pop(key) for key in ("run_id", "started_at") if key in options}
    cassette = None
    defaults_only = config is None
    config = SwarmConfig.from_options(config, env=env, **options)  # checked first
    if defaults_only and config.replay:
        # A replay asks what the recording asked: its request-shaping options replace
        # the SWARMKIT_* defaults; the keywords given here still win (replayconfig).
        cassette = await asyncio.to_thread(Cassette.load, config.replay)
        config = with_recorded_requests(cassette, SwarmConfig.from_env(env)
                                        ).with_options(**options)
    sinks = (*sinks, *span_sinks(config, tracer_provider))  # otel: spans, when on
    if plan_from is not None:
        config = config.with_options(tasks=await asyncio.to_thread(
            plan_of, plan_from, config.history_file()))
    stored_task = None
    if resume is not None:
        config, stored_task = await asyncio.to_thread(_resumed, config, resume, task)
    if caller is not None:
        config = await asyncio.to_thread(resolve_models, config, env)
        worker_loop = tree_loop(await build_worker_loop(tools, mcp_servers, **mcp_choice),
                                config.depth)
        return Engine(config, caller=caller, sinks=sinks, worker_loop=worker_loop,
                      record_type=Run, budget=shared_budget, stored_task=stored_task,
                      checks=checks, review=review)
    if config.replay:
        # Replay never runs a tool: the recorded tool schemas shape the requests and the
        # results come from the cassette, so no function or MCP server is needed (or
        # started, even when given).
        if cassette is None or cassette.source != str(config.replay):
            cassette = await asyncio.to_thread(Cassette.load, config.replay)
        config = cassette.resolve_config(config)
        worker_loop = replay_worker_loop(
            call.request for call in cassette.calls if call.role == "worker")
        ray = None  # a replay makes no call: it runs here, whatever cluster= says
    else:
        config = await asyncio.to_thread(resolve_models, config, env)
        ray = await _cluster(config, mcp_servers)  # refused before any tool starts
        worker_loop = await build_worker_loop(tools, mcp_servers, **mcp_choice)
    worker_loop = tree_loop(worker_loop, config.depth)  # split_task, at depth > 1
    store_config = config

    def provider() -> ModelCaller:
        live = OpenAIProvider(store_config, env=env)
        live.check_keys()  # a missing key is a refusal, not a failed run in the history
        return live if shared is None else shared.caller(live)

    adopted = await asyncio.to_thread(stored_batches, config)
    store = CallStore.from_config(config, env=env, provider_factory=provider, cassette=cassette)
    if store.history_off is not None:  # the run goes ahead, and its record says so
        config = replace(config, history=False, cache=False)
    if carried and config.tasks and not config.replay:  # carried only into given tasks
        store.carry(carried)
    recorded = {**taken, **store.engine_options()}  # replay: the recorded id, review, ...
    if review is not None:
        recorded["review"] = review
    try:
        dispatch = None if ray is None else ClusterDispatch(
            ray, config, env=shard_env(config, env), tools=tools or (), store=store)
        return Engine(config, caller=store, sinks=[*sinks, *store.sinks],
                      worker_loop=worker_loop, record_type=Run, budget=shared_budget,
                      batches=BatchClient(config, env=env) if config.batch else None,
                      adopted=adopted, stored_task=stored_task, checks=checks,
                      dispatch=dispatch, **recorded)
    except BaseException:
        # The engine refused the config (e.g. no price for a budgeted model): nobody
        # else holds the store, so its history database and client close here.
        await store.aclose()
        raise


async def _cluster(config: SwarmConfig, mcp_servers: Any) -> ModuleType | None:
    """Ray, connected for ``cluster=`` (started locally the first time, off the loop),
    or None without one; what a cluster cannot run is refused first, in one line."""
    if config.cluster is None:
        return None
    refuse_unshardable(config, mcp_servers=mcp_servers)
    return await asyncio.to_thread(connect, config.cluster)


async def run(
    task: str = "",
    *,
    config: SwarmConfig | None = None,
    sinks: Sequence[Sink] = (),
    env: Mapping[str, str] | None = None,
    **options: Any,
) -> Run:
    """Run a planner → workers → reducer swarm and return its Run.

    Every run is kept in the history database (``history_path``, default
    ``.swarmkit/history.db``; ``history=False`` turns it off). ``cache=True`` serves
    identical requests from that database at $0 (off by default from Python; the
    ``%%swarm`` magic turns it on). ``record="run.swarm.json"`` writes a cassette,
    ``replay="run.swarm.json"`` replays one with no network at all.
    ``resume=RUN`` continues an earlier run; its task is the stored one (``task`` may be
    left out, and another task is refused). ``checks=[...]`` (``swarmkit.Check``s or
    functions) and ``judge=MODEL`` (with ``rubric=``) score the answer: ``Run.scores``.
    """
    if not task.strip() and options.get("resume") is None:
        raise ConfigError("run: the task is empty; give one (or resume=RUN to continue "
                          "an earlier run)")
    if options.get("repeat") not in (None, 1):
        raise ConfigError(f"run: repeat={options['repeat']!r} repeats the variants of a "
                          "comparison; use swarmkit.compare(task, variants=[...], "
                          "repeat=K), or drop repeat= for one run")
    engine = await create_engine(config=config, sinks=sinks, env=env, task=task, **options)
    try:
        return await engine.execute(task)
    finally:
        try:
            await engine.caller.aclose()
        except SwarmError as exc:  # e.g. a refused --record file: say so, keep the Run
            exc.run = engine.run
            raise


def run_sync(task: str = "", **options: Any) -> Run:
    """``run`` for synchronous code, including inside a running loop (a notebook cell)."""
    return run_blocking(lambda: run(task, **options))


@runtime_checkable
class Planned(Protocol):
    """What ``plan_from=`` takes besides a run id: a Run, or a dry run's result (the
    magic's ``DryRun``), anything with the run's id and its plan."""

    @property
    def run_id(self) -> str: ...

    @property
    def plan(self) -> Sequence[str]: ...


def plan_of(source: Planned | str, history_path: str | os.PathLike[str] | None = None
            ) -> tuple[str, ...]:
    """The plan of an earlier run (``plan_from=``): a Run, a dry run's result, or a run
    id (a prefix is enough) in the history database (a dry run's too: it is kept as
    ``planned``)."""
    if isinstance(source, str):
        with History(history_path) as history:
            source = history.load_run(source)
    if not isinstance(source, Planned) or not all(isinstance(t, str) for t in source.plan):
        raise ConfigError("plan_from takes a Run, a dry run's result or a run id, not "
                          f"{kind_of(source)}")
    if not source.plan:
        raise ConfigError(f"plan_from: run {source.run_id} has no plan (its planner failed); "
                          "pick a run that has workers")
    return tuple(source.plan)


def check_resumable(past: RunRecord, *, notebook: bool = False) -> None:
    """Refuse a run that a resume cannot continue, in one line that says what to do.

    A dry-run (``planned``) is refused: resuming it would make every worker call and the
    reducer's, which takes the explicit step ``plan_from`` (``%%swarm --plan-from``).
    ``notebook`` (``%swarm resume``, which names itself before the message): the fix is
    told as the magic's flag only, and the message does not start ``resume:``.
    """
    where = "" if notebook else "resume: "
    if past.status == "planned":
        flag = f"%%swarm --plan-from {past.run_id}"
        how = flag if notebook else f'run with plan_from="{past.run_id}" (or {flag})'
        raise ConfigError(f"{where}run {past.run_id} is a dry-run (planned, not run); "
                          f"to make its calls: {how}")
    if not past.plan:
        raise ConfigError(f"{where}run {past.run_id} has no plan (it ended before its "
                          "planner answered); run it again instead")


def _resumed(config: SwarmConfig, source: RunRecord | str, task: str | None
             ) -> tuple[SwarmConfig, str]:
    """``resumed_config`` and the stored task (the task the resuming run runs)."""
    with History(config.history_file()) as history:
        past = history.load_run(source) if isinstance(source, str) else source
    if not isinstance(past, RunRecord):
        raise ConfigError(f"resume takes a Run or a run id, not {kind_of(past)}")
    check_resumable(past)
    stored = resumed_task(past.run_id, past.task, task)
    return replace(config.with_options(tasks=past.plan, cache=True), resume=past.run_id), stored


def resumed_config(config: SwarmConfig, source: RunRecord | str, task: str | None
                   ) -> SwarmConfig:
    """``config`` continuing the run ``source`` (a Run, or a run id in the history).

    The earlier run's plan is the plan, and its calls answered before it ended (however
    it ended: a dead kernel included) are served from the history, where every answer
    is written as it lands; so only the missing calls are made. The options are this
    run's: the same ones make the same requests, and a changed option asks again.
    Refused, with no call made: a dry-run (``check_resumable``), a run with no plan, and
    a ``task`` other than the stored one (``None`` or empty means the stored one).
    """
    return _resumed(config, source, task)[0]


def stored_batches(config: SwarmConfig) -> tuple[BatchRecord, ...]:
    """The batches of the run ``config`` resumes (``--batch``): polled, not sent again."""
    if not (config.batch and config.resume):
        return ()
    with History(config.history_file()) as history:
        return tuple(history.load_run(config.resume).batches)


def load_run(run_id: str, history_path: str | os.PathLike[str] | None = None) -> Run:
    """A run from the history database (an id prefix is enough), with its tables and
    ``export``; ``history_path`` defaults to ``.swarmkit/history.db``."""
    with History(history_path) as history:
        return Run.of(history.load_run(run_id))
