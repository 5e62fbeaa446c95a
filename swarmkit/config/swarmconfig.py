"""``SwarmConfig``: every option of a run, frozen, merged from defaults < env < session < call.

Per-role settings (model, endpoint, key variable, sampling) live in ``RoleConfig`` so that
planner, workers and reducer can use different models behind different endpoints.
Only the *names* of key environment variables are ever stored here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

from ..errors import ConfigError
from .coercion import check_tool_names, coerce_role_value, coerce_top, with_given_tasks
from .options import (
    NOT_FIELDS,
    OPTIONS,
    ROLE_FIELDS,
    ROLE_NAMES,
    TOOL_CHOICE_KEYS,
    env_options,
)
from .prompts import DEFAULT_PLANNER_PROMPT, DEFAULT_REDUCER_PROMPT, DEFAULT_SYSTEM_PROMPT
from .urls import redact_url
from .validation import validate_config

__all__ = [
    "AUTO_MODEL",
    "DEFAULT_KEY_ENV",
    "DEFAULT_MODEL",
    "JUDGE_MAX_TOKENS",
    "LOCAL_MODEL",
    "LOCAL_PENALTIES",
    "ROLES",
    "Role",
    "RoleConfig",
    "SwarmConfig",
    "is_local_model",
]

# The swarm's three roles are ROLES; the judge is a role of its own (its calls have role
# "judge"), with its own model (model= leaves it unset: no judge) and, unless given its
# own, the reducer's endpoint and key variables (so base_url= routes it too).
Role = Literal["planner", "worker", "reducer", "judge"]
ROLES: tuple[Role, ...] = ROLE_NAMES  # type: ignore[assignment]
# The judge answers {"score": 0-10, "reason": "..."}: a sentence or two.
JUDGE_MAX_TOKENS = 512

LOCAL_MODEL = "local"
# The embedded 135M model loops: a worker or reducer repeats a paragraph until its max
# tokens cut it. These penalties (OpenAI's fields, which llama.cpp's server applies) let
# the demo's answers end on their own; the planner's grammar-bound JSON gets none.
LOCAL_PENALTIES = {"frequency_penalty": 0.5, "presence_penalty": 0.3}
# "auto" picks DEFAULT_MODEL when a key or base URL is configured, else the local model.
AUTO_MODEL = "auto"
DEFAULT_MODEL = "gpt-4.1-mini"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"

def is_local_model(model: object) -> bool:
    """Whether ``model`` names a model swarmkit serves itself: the embedded one (``local``)
    or a GGUF file (``local:PATH``, ``local:hf:OWNER/REPO/FILE.gguf``)."""
    return isinstance(model, str) and (model == LOCAL_MODEL
                                       or model.startswith(LOCAL_MODEL + ":"))


@dataclass(frozen=True, slots=True)
class RoleConfig:
    """How one role talks to its model."""

    model: str
    base_url: str | None = None
    api_key_env: tuple[str, ...] = (DEFAULT_KEY_ENV,)
    max_tokens: int = 1024
    temperature: float | None = None
    seed: int | None = None

    @property
    def is_local(self) -> bool:
        return is_local_model(self.model)

    def keys_set(self, env: Mapping[str, str]) -> tuple[str, ...]:
        """The names in ``api_key_env`` whose variable holds a key in ``env``, in order."""
        return tuple(name for name in self.api_key_env if env.get(name))


# How many sub-tasks one split_task call may run, unless max_children says otherwise.
DEFAULT_MAX_CHILDREN = 4
def _default_role(max_tokens: int) -> RoleConfig:
    return RoleConfig(model=AUTO_MODEL, max_tokens=max_tokens)


@dataclass(frozen=True, slots=True)
class SwarmConfig:
    """All options of one swarm run. Build it with :meth:`SwarmConfig.from_options`."""

    planner: RoleConfig = field(default_factory=lambda: _default_role(1024))
    worker: RoleConfig = field(default_factory=lambda: _default_role(1024))
    reducer: RoleConfig = field(default_factory=lambda: _default_role(2048))
    max_workers: int = 8
    concurrency: int = 4
    budget_usd: Decimal | None = None
    budget_tokens: int | None = None
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    reducer_prompt: str = DEFAULT_REDUCER_PROMPT
    planner_prompt: str = DEFAULT_PLANNER_PROMPT
    call_timeout: float = 120.0
    run_timeout: float | None = None
    max_attempts: int = 6
    backoff_base: float = 0.25
    backoff_max: float = 20.0
    stream_reducer: bool = True
    # Typed worker outputs: canonical JSON text of the JSON schema each worker's reply
    # must match (swarmkit.config.outputschema); set from a model class or dict by output_type.
    output_schema: str | None = None
    # tools
    max_tool_hops: int = 3
    tool_concurrency: int = 8
    max_tool_errors: int = 3
    max_tool_result_chars: int = 8000
    # Calls past this many in one model turn are refused (the model is told), not run.
    max_tool_calls_per_turn: int = 16
    tool_timeout: float = 30.0
    # rate limits: rpm/tpm per key at each base URL, counted over rate_window seconds
    rpm: float | None = None
    tpm: float | None = None
    rate_window: float = 60.0
    adaptive_concurrency: bool = True
    # None: spread the first wave over 0.25 s only when rpm/tpm are set (engine.worker.start_delay)
    start_jitter: float | None = None
    # call store
    cache: bool = False
    record: str | None = None
    replay: str | None = None
    history_path: str | None = None
    history: bool = True
    # Steps (e.g. "worker-3") that skip the cache lookup: %swarm rerun --worker uses it.
    refresh: tuple[str, ...] = ()
    prices: tuple[tuple[str, str, str], ...] = ()
    # The plan, when the user gave it (tasks=, --tasks, --plan-from): the planner is not
    # asked and every task gets a worker. Recorded, so a replay needs no namespace.
    tasks: tuple[str, ...] = ()
    # False: no reducer; the run ends with the workers' outputs and no answer.
    reduce: bool = True
    # OpenTelemetry spans (swarmkit.telemetry): None is automatic, on when a tracer
    # provider is configured; otel_content adds the scrubbed prompts and completions.
    otel: bool | None = None
    otel_content: bool = False
    # The run this one continues (resume=): its plan is ``tasks`` and its answered calls
    # are served from the history, so only the missing calls are made.
    resume: str | None = None
    # The most prompt tokens one reducer request may carry; None: the reducer model's
    # context from the model table (less its max_tokens), or a conservative default.
    reducer_max_input_tokens: int | None = None
    # Batch mode: the workers go to the Batch API (swarmkit.engine.batchfanout), whose status
    # is looked at every batch_poll seconds; the planner and the reducer run live.
    batch: bool = False
    batch_poll: float = 30.0
    # The roles whose "auto" model became the embedded one because no key or base URL
    # was set (set by api.resolve_models; config.automodel says so in every view).
    auto_local: tuple[str, ...] = ()
    # The judge (swarmkit.engine.judge): its model (None: no judge), endpoint and key
    # variables, and the rubric it scores against (None: the default rubric).
    judge: str | None = None
    judge_base_url: str | None = None  # None: the reducer's
    judge_api_key_env: tuple[str, ...] = ()  # empty: the reducer's
    rubric: str | None = None
    # The judge's seed: None, except in repeat i of a comparison (for_repeat), where it is
    # i, so each repeat's judge call is its own and the judge's spread is measured too.
    judge_seed: int | None = None
    # How many times a comparison runs each variant (swarmkit.comparison).
    repeat: int = 1
    # Swarms of swarms (swarmkit.engine.subtree): below ``depth`` a worker is offered
    # the split_task tool, whose call runs 2 to ``max_children`` sub-tasks as a child
    # swarm; ``max_total_workers`` caps the workers of the whole tree (None: only
    # ``max_workers`` x ``max_children`` ** (depth - 1) bounds it). depth 1 is the flat
    # swarm, its requests unchanged.
    depth: int = 1
    max_children: int = DEFAULT_MAX_CHILDREN
    max_total_workers: int | None = None
    # A run whose forecast exceeds this many USD stops after its planner, for review
    # (swarmkit.api.planning). A gate in front of the run, not part of it: never recorded.
    confirm_over: Decimal | None = None
    # Where the workers run (swarmkit.cluster): None in this process; "ray" a local Ray
    # (started once, kept for the next run), "ray:auto" the running cluster, or
    # "ray://HOST:PORT" through Ray Client. ``shards``: how many actors share the
    # workers (None: the cluster's CPUs, at most the number of workers).
    cluster: str | None = None
    shards: int | None = None

    def role(self, role: Role) -> RoleConfig:
        if role == "judge":
            return self.judge_role
        return getattr(self, role)  # type: ignore[no-any-return]

    def for_repeat(self, index: int) -> SwarmConfig:
        """The config of repeat ``index`` (0 to ``repeat`` - 1) of a comparison's variant:
        repeat 0 is this config itself (so ``repeat=1`` changes nothing), and repeat i
        gives every role the seed ``seed + i`` (``i`` when unset), the judge too. The seed
        is part of a request's fingerprint, so the repeats are distinct calls, and a re-run
        of the same repeats asks the same requests, which the cache then serves."""
        if not 0 <= index < self.repeat:
            raise ConfigError(f"repeat {index} is not one of this config's {self.repeat} "
                              f"repeats; give 0 to {self.repeat - 1}")
        if index == 0:
            return self
        seeded = {role: replace(self.role(role), seed=(self.role(role).seed or 0) + index)
                  for role in ROLES}
        return replace(self, **seeded, judge_seed=(self.judge_seed or 0) + index)

    @property
    def judge_role(self) -> RoleConfig:
        """How the judge talks to its model; a ConfigError when no judge is set."""
        if self.judge is None:
            raise ConfigError("no judge is set; give judge=MODEL (--judge MODEL)")
        base_url = self.reducer.base_url if self.judge_base_url is None else self.judge_base_url
        return RoleConfig(model=self.judge, base_url=base_url,
                          api_key_env=self.judge_api_key_env or self.reducer.api_key_env,
                          max_tokens=JUDGE_MAX_TOKENS, seed=self.judge_seed)

    @property
    def models(self) -> dict[str, str]:
        return {role: self.role(role).model for role in ROLES}

    def summary(self) -> dict[str, Any]:
        """A JSON-able view with no secret values (only key variable *names*)."""
        data = asdict(self)
        data["budget_usd"] = None if self.budget_usd is None else str(self.budget_usd)
        for role in ROLES:
            data[role]["api_key_env"] = list(self.role(role).api_key_env)
            if self.role(role).base_url is not None:
                data[role]["base_url"] = redact_url(self.role(role).base_url)
        data["prices"] = [list(p) for p in self.prices]
        data["refresh"] = list(self.refresh)
        data["tasks"] = list(self.tasks)
        if self.auto_local:
            data["auto_local"] = list(self.auto_local)
        else:  # the usual case: no key of its own, so a recorded run reads as before
            del data["auto_local"]
        # Without a judge (or repeats) nothing of them is written, so an unscored run's
        # config, cassette and history row read exactly as before scoring existed.
        for name in ("judge", "judge_base_url", "judge_api_key_env", "rubric", "judge_seed"):
            del data[name]
        if self.judge is not None:
            role = self.judge_role
            judge = asdict(role)
            judge["api_key_env"] = list(role.api_key_env)
            if role.base_url is not None:
                judge["base_url"] = redact_url(role.base_url)
            data["judge"], data["rubric"] = judge, self.rubric
        if self.repeat == 1:
            del data["repeat"]
        # Left out at their defaults, so a flat run's config reads as before trees.
        for name, default in (("depth", 1), ("max_children", DEFAULT_MAX_CHILDREN),
                              ("max_total_workers", None)):
            if data[name] == default:
                del data[name]
        del data["confirm_over"]
        for name in ("cluster", "shards"):  # a run in one process reads as before
            if data[name] is None:
                del data[name]
        return data

    @classmethod
    def from_summary(cls, data: Mapping[str, Any]) -> SwarmConfig:
        values = dict(data)
        for role in ROLES:
            role_data = dict(values[role])
            role_data["api_key_env"] = tuple(role_data.get("api_key_env") or ())
            values[role] = RoleConfig(**role_data)
        if values.get("budget_usd") is not None:
            values["budget_usd"] = Decimal(values["budget_usd"])
        values["prices"] = tuple(tuple(p) for p in values.get("prices") or ())
        values["refresh"] = tuple(values.get("refresh") or ())
        values["tasks"] = tuple(values.get("tasks") or ())
        values["auto_local"] = tuple(values.get("auto_local") or ())
        judge = values.pop("judge", None)
        if isinstance(judge, Mapping):
            values["judge"] = judge.get("model")
            values["judge_base_url"] = judge.get("base_url")
            values["judge_api_key_env"] = tuple(judge.get("api_key_env") or ())
            values["judge_seed"] = judge.get("seed")
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in known})

    @classmethod
    def from_options(
        cls,
        base: SwarmConfig | None = None,
        *,
        env: Mapping[str, str] | None = None,
        **options: Any,
    ) -> SwarmConfig:
        """Apply ``options`` (public names such as ``model=``, ``workers=``) over ``base``.

        ``base`` defaults to the built-in defaults with ``SWARMKIT_*`` environment
        variables applied.
        """
        config = base if base is not None else cls.from_env(os.environ if env is None else env)
        return config.with_options(**options)

    @classmethod
    def from_env(
        cls, env: Mapping[str, str], defaults: Mapping[str, Any] | None = None
    ) -> SwarmConfig:
        """Built-in defaults < ``defaults`` (a front end's own, e.g. the notebook's cache
        on) < ``SWARMKIT_*`` variables."""
        variables = {var: opt for var, opt in env_options().items() if env.get(var)}
        options = {opt: env[var] for var, opt in variables.items()}
        try:
            return cls().with_options(**{**(defaults or {}), **options})
        except ConfigError as exc:
            # Name the variable, not only the option: the user never typed the option.
            for var, opt in variables.items():
                try:
                    cls().with_options(**{opt: env[var]})
                except ConfigError as alone:
                    raise ConfigError(f"${var}: {alone}; fix the variable or unset it"
                                      ) from None
            raise exc from None

    def with_options(self, **options: Any) -> SwarmConfig:
        """A copy with public option names applied; ``None`` values are ignored."""
        options = with_given_tasks({k: v for k, v in options.items() if v is not None})
        roles = {role: self.role(role) for role in ROLES}
        top: dict[str, Any] = {}
        shared_role: dict[str, Any] = {}
        for name, value in options.items():
            if name in ROLE_FIELDS:
                shared_role[name] = coerce_role_value(name, value)
            elif name.split("_", 1)[0] in ROLES and name.split("_", 1)[1] in ROLE_FIELDS:
                continue  # per-role options are applied after the shared ones
            elif name in _ALIASES:
                top[_ALIASES[name]] = coerce_top(_ALIASES[name], value, name)
            elif name in _TOP_FIELDS:
                top[name] = coerce_top(name, value)
            elif name in TOOL_CHOICE_KEYS:
                check_tool_names(name, value)  # kept by the caller, for the tool loop
            else:
                raise ConfigError(f"unknown option {name!r}; see help(swarmkit.run) for options")
        for role in ROLES:
            if shared_role:
                roles[role] = replace(roles[role], **shared_role)
            per_role = {
                key: coerce_role_value(key, options[f"{role}_{key}"], f"{role}_{key}")
                for key in ROLE_FIELDS
                if f"{role}_{key}" in options
            }
            if per_role:
                roles[role] = replace(roles[role], **per_role)
        config = replace(self, **top, **roles)
        config.validate()
        return config

    def validate(self) -> None:
        """Raise a one-line ConfigError naming the first wrong option (see validation)."""
        validate_config(self)
        if self.record and self.replay:
            raise ConfigError("use either record or replay, not both")
        self._validate_paths_and_text()

    def _validate_paths_and_text(self) -> None:
        for name in ("record", "replay", "history_path"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise ConfigError(f"{name} must be a file path, got {value!r}")
        for name in ("system_prompt", "reducer_prompt", "planner_prompt"):
            if not isinstance(getattr(self, name), str):
                raise ConfigError(f"{name} must be text, got {getattr(self, name)!r}")
        if self.rubric is not None and not isinstance(self.rubric, str):
            raise ConfigError(f"rubric must be text, got {self.rubric!r}")
        try:
            self.planner_prompt.format(max_workers=self.max_workers)
        except (KeyError, IndexError, ValueError) as exc:
            raise ConfigError(
                f"planner_prompt may only use the field {{max_workers}}, not {exc}; write "
                "other braces twice: {{ and }}"
            ) from None

    def history_file(self) -> Path:
        return Path(self.history_path or os.path.join(".swarmkit", "history.db"))


# Public option name -> field, from the option table; a field's own name works too.
_ALIASES = {row.name: row.attr for row in OPTIONS
            if not row.role and row.name not in NOT_FIELDS and row.name != row.attr}
_TOP_FIELDS = {
    f.name for f in fields(SwarmConfig) if f.name not in ROLES
}
