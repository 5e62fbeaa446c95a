"""The option table: every option of a run, declared once, beside ``SwarmConfig``.

One :class:`Option` row names a public option (the keyword of ``swarmkit.run`` and the
key of ``%swarm config``), the ``SwarmConfig``/``RoleConfig`` field it sets, how its
text is read (``kind``), its help line, and the surfaces it appears on:

- ``magic``: a ``%%swarm`` flag (``swarmkit.magics.flags`` builds its parser from it);
- ``config``: a ``%swarm config`` key (and a ``swarm_config(...)`` keyword);
- ``cli``: a ``jswarm run`` flag (``swarmkit.cli`` builds its parser from it);
- ``replay``: it shapes the requests, so an exported notebook's replay cell sets it
  (``swarmkit.export.cellsource``).

A ``role`` option is a ``RoleConfig`` field: it sets all three roles, and
``planner_<name>``, ``worker_<name>`` and ``reducer_<name>`` set one; ``role_flags``
says on which surfaces those per-role names are flags too. The README's options table
is rendered from here (:func:`markdown_table`; a test keeps it equal). Adding an option
is adding its field to ``SwarmConfig`` and one row here.

The order of the rows is the order of the ``%%swarm`` help and of an exported replay
line: keep new rows with a magic flag after the ones already there.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "NOT_FIELDS",
    "OPTIONS",
    "ROLE_FIELDS",
    "ROLE_NAMES",
    "SURFACES",
    "TOOL_CHOICE_KEYS",
    "UNSET_VALUES",
    "Kind",
    "Option",
    "Surface",
    "config_keys",
    "env_options",
    "markdown_table",
    "option_named",
    "public_name",
    "replace_readme_table",
]

Surface = Literal["magic", "config", "cli", "replay"]
SURFACES: frozenset[Surface] = frozenset(("magic", "config", "cli", "replay"))
# How the option's text is read: "int" a whole number, "number" a float, "usd" a USD
# amount, "bool" true/false, "names" comma-separated names, "path" a file path, "url" an
# http(s) URL, "model" a model name, "text" as written, "steps" comma-separated step
# names, "prices" (model, in, out) rows, "tools" tools for the workers (not a config
# field: a keyword of create_engine), "tasks" sub-tasks from the notebook (a list, a
# Series or a DataFrame: the magic looks its name up), "run" an earlier run (a Run in
# the notebook, or a run id in the history: a keyword of create_engine), "schema" a
# pydantic model class or JSON schema (a namespace name on the magic line), "checks"
# functions or swarmkit.Check values from the notebook (not a config field: a keyword of
# create_engine, like tools).
Kind = Literal["int", "number", "usd", "bool", "names", "path", "url", "model", "text",
               "steps", "prices", "tools", "tasks", "run", "schema", "checks"]
ROLE_NAMES = ("planner", "worker", "reducer")
# ``%swarm config key=none`` (or ``default``, or nothing) unsets the key.
UNSET_VALUES = ("", "none", "default")


@dataclass(frozen=True, slots=True)
class Option:
    """One option of a run. ``field`` defaults to ``name``; ``flag`` to ``--name``
    with dashes; ``surfaces`` to all four."""

    name: str
    kind: Kind
    help: str
    field: str = ""
    role: bool = False
    flag: str = ""
    metavar: str = "VALUE"
    surfaces: frozenset[Surface] = SURFACES
    role_flags: frozenset[Surface] = frozenset()
    no_help: str = ""  # a "bool" option's --no-<name> switch, where it differs from help
    # A "bool" option's %%swarm switches: "off" only --no-<name> (its default is on in a
    # notebook), "on" only --<name> (off unless asked), "both" (its default is automatic).
    magic_switch: Literal["off", "on", "both"] = "off"
    env: str = ""  # the SWARMKIT_* variable that sets its default (SwarmConfig.from_env)

    @property
    def attr(self) -> str:
        """The ``SwarmConfig`` (or, for a role option, ``RoleConfig``) field it sets."""
        return self.field or self.name

    @property
    def flag_name(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")

    def on(self, surface: Surface) -> bool:
        return surface in self.surfaces

    def names(self) -> tuple[str, ...]:
        """Its public name, and for a role option the three per-role names after it."""
        if not self.role:
            return (self.name,)
        return (self.name, *(f"{role}_{self.name}" for role in ROLE_NAMES))

    def flags(self, surface: Surface) -> Iterator[tuple[str, str, str]]:
        """``(flag, option name, help)`` for each flag of this option on ``surface``."""
        if not self.on(surface):
            return
        yield self.flag_name, self.name, self.help
        if surface in self.role_flags:
            for role in ROLE_NAMES:
                yield (f"--{role}-{self.flag_name[2:]}", f"{role}_{self.name}",
                       self.role_help(role))

    def role_help(self, role: str) -> str:
        who = "the workers" if role == "worker" else f"the {role}"
        head, every, _ = self.help.partition(" for every role")
        return f"{head} for {who}" if every else f"{self.help} ({who})"


def _o(name: str, kind: Kind, help: str, metavar: str = "VALUE", *,
       field: str = "", role: bool = False, flag: str = "",
       on: str = "magic config cli replay", role_flags: str = "", no_help: str = "",
       env: str = "", switch: Literal["off", "on", "both"] = "off") -> Option:
    return Option(name, kind, help, field=field, role=role, flag=flag, metavar=metavar,
                  surfaces=frozenset(on.split()),  # type: ignore[arg-type]
                  role_flags=frozenset(role_flags.split()),  # type: ignore[arg-type]
                  no_help=no_help, env=env, magic_switch=switch)


OPTIONS: tuple[Option, ...] = (
    # models and endpoints
    _o("model", "model",
       "model for every role (a name, 'auto', 'local' or 'local:FILE.gguf')", "NAME",
       role=True, role_flags="magic cli", env="SWARMKIT_MODEL"),
    _o("base_url", "url", "OpenAI-compatible endpoint for every role", "URL", role=True,
       role_flags="cli", env="SWARMKIT_BASE_URL"),
    _o("api_key_env", "names", "environment variable(s) holding the key, comma-separated",
       "VAR", role=True, role_flags="cli", env="SWARMKIT_API_KEY_ENV"),
    # the swarm's shape and limits
    _o("workers", "int", "at most this many sub-tasks / workers", "N", field="max_workers",
       env="SWARMKIT_WORKERS"),
    _o("concurrency", "int", "workers running at once", "N", env="SWARMKIT_CONCURRENCY"),
    _o("budget", "usd", "hard spending cap in USD for the whole run", "USD",
       field="budget_usd", env="SWARMKIT_BUDGET"),
    _o("budget_tokens", "int", "hard cap on tokens for the whole run", "N"),
    _o("max_tokens", "int", "max completion tokens per call", "N", role=True),
    _o("temperature", "number", "sampling temperature (0-2)", "T", role=True),
    _o("seed", "int", "sampling seed", "N", role=True),
    _o("run_timeout", "number", "cancel the run after this many seconds", "S"),
    _o("rpm", "number", "requests per minute, per key at each endpoint", "N"),
    _o("tpm", "number", "tokens per minute, per key at each endpoint", "N"),
    # tools
    _o("tools", "tools", "@swarmkit.tool functions from the notebook, comma-separated",
       "A,B", on="magic cli"),
    _o("max_tool_hops", "int", "model turns per worker that may call tools", "N"),
    _o("tool_concurrency", "int", "tool calls running at once in one turn", "N"),
    _o("max_tool_errors", "int", "tool errors before a worker fails (tools)", "N"),
    _o("max_tool_result_chars", "int", "tool results are cut to this many characters", "N"),
    _o("max_tool_calls_per_turn", "int",
       "tool calls run per model turn; the rest are refused", "N"),
    _o("tool_timeout", "number", "seconds one tool call may take", "S"),
    # prompts
    _o("system_prompt", "text", "system prompt of the workers", "TEXT", flag="--system"),
    _o("reducer_prompt", "text", "system prompt of the reducer", "TEXT"),
    # the call store
    _o("record", "path", "write the run's calls to this cassette (JSON)", "FILE",
       on="magic config cli"),
    _o("replay", "path", "replay the run from this cassette: no network, the same output",
       "FILE", on="magic config cli"),
    _o("cache", "bool", "answer a request identical to an earlier one from the history "
       "(on in a notebook)", on="magic config cli",
       no_help="ask the model even where an identical request was answered before",
       env="SWARMKIT_CACHE"),
    # bring your own sub-tasks
    _o("tasks", "tasks", "skip the planner: one worker per item of this list, Series or "
       "DataFrame", "NAME", on="magic"),
    _o("task_template", "text", "how a DataFrame row reads as a sub-task, e.g. "
       "'Review {title}: {body}'", "TEXT", on="magic"),
    _o("plan_from", "run", "skip the planner: reuse the plan of this Run (or run id)",
       "RUN", on="magic"),
    _o("resume", "run", "continue this earlier run (a Run or run id): its plan, and its "
       "answered calls served from the history, so only the missing calls are made", "RUN",
       on="cli"),
    _o("reduce", "bool", "merge the workers' outputs into one answer",
       no_help="no reducer: the run ends with the workers' outputs (answer None)"),
    _o("output_type", "schema", "pydantic model or JSON schema (a notebook name) each "
       "worker's reply must match; worker.data holds it", "NAME", field="output_schema",
       flag="--schema", on="magic config cli replay"),
    # traces (swarmkit.telemetry)
    _o("otel", "bool", "send the run's spans to OpenTelemetry (on when a tracer provider "
       "is configured)", on="magic config cli", switch="both",
       no_help="no OpenTelemetry spans, even when a tracer provider is configured"),
    _o("otel_content", "bool", "put prompts and completions (scrubbed) in the spans",
       on="magic config cli", switch="on"),
    _o("batch", "bool", "send the workers to the Batch API (half price for OpenAI's "
       "models, results within 24 h); no tools", on="magic config cli", switch="on"),
    # scoring (swarmkit.engine.scoring, swarmkit.engine.judge)
    _o("judge", "model", "model that scores the answer against the rubric, 0-10 (no judge "
       "when unset; model= does not set it)", "NAME", on="magic config cli"),
    _o("rubric", "text", "what the judge scores the answer against (default: correct, "
       "complete and clear for the task); in %%swarm, @name reads it from the notebook",
       "TEXT", on="magic config cli"),
    _o("repeat", "int", "run each variant of a --compare this many times", "K",
       on="magic config"),
    _o("checks", "checks", "checks from the notebook (functions or swarmkit.Check values) "
       "that score the answer, comma-separated", "A,B", flag="--check", on="magic"),
    # swarms of swarms (swarmkit.engine.subtree)
    _o("depth", "int", "levels of the swarm: below it a worker may split its sub-task "
       "into a child swarm (split_task); 1, the default, is a flat swarm", "D"),
    _o("max_children", "int", "the most sub-tasks one split may run (default 4; more "
       "are cut)", "N"),
    _o("max_total_workers", "int", "the most workers in the whole tree, every level "
       "counted (default: no cap but workers x max_children per level)", "N"),
    _o("confirm_over", "usd", "stop for review after the planner when the forecast "
       "(expected from the history, else the bound) is over this many USD", "USD",
       on="magic config cli", env="SWARMKIT_CONFIRM_OVER"),
    # past one process (swarmkit.cluster; the ray extra)
    _o("cluster", "text", "run the workers on Ray: 'ray' (a local Ray, kept for the next "
       "run), 'ray:auto' (the running cluster) or 'ray://HOST:PORT' (Ray Client)", "WHERE",
       on="magic config cli"),
    _o("shards", "int", "Ray actors sharing the workers (default: the cluster's CPUs, at "
       "most the workers)", "K", on="magic config cli"),
    # options without a %%swarm flag (set them with %swarm config)
    _o("planner_prompt", "text", "system prompt of the planner ({max_workers} is the "
       "worker cap)", "TEXT", on="config cli replay"),
    _o("call_timeout", "number", "seconds one model call may take", "S",
       on="config cli replay"),
    _o("max_attempts", "int", "tries per model call (retries on 429, 5xx, timeouts)", "N",
       on="config cli replay"),
    _o("backoff_base", "number", "first retry delay in seconds (doubles per retry)", "S",
       on="config cli replay"),
    _o("backoff_max", "number", "longest retry delay in seconds", "S",
       on="config cli replay"),
    _o("stream_reducer", "bool", "stream the reducer's answer as it is written",
       on="config replay"),
    _o("reducer_max_input_tokens", "int", "the most prompt tokens one reducer request "
       "may carry; past it the outputs are merged in parts (default: from the model's "
       "context)", "N", on="config cli replay"),
    _o("rate_window", "number", "seconds over which --rpm and --tpm are counted", "S",
       on="config cli replay"),
    _o("adaptive_concurrency", "bool", "run fewer workers at once after a 429",
       on="config cli replay"),
    _o("start_jitter", "number", "spread the first wave of calls over this many seconds "
       "(0-0.25)", "S", on="config cli replay"),
    _o("history_path", "path", "the SQLite history file (default .swarmkit/history.db)",
       "FILE", on="config cli", env="SWARMKIT_HISTORY"),
    _o("history", "bool", "keep the run in the history database", on="config cli"),
    _o("batch_poll", "number", "seconds between looks at a batch's status (--batch)", "S",
       on="config cli"),
    _o("judge_base_url", "url", "OpenAI-compatible endpoint of the judge (default: "
       "base_url's)", "URL", on="config cli"),
    _o("judge_api_key_env", "names", "environment variable(s) holding the judge's key "
       "(default: api_key_env's)", "VAR", on="config cli"),
    _o("mcp_tools", "names", "only these MCP tools (NAME__tool, comma-separated) of the "
       "servers they name; a server not named offers all its tools", "A,B", on="config"),
    _o("mcp_exclude_tools", "names", "MCP tools (NAME__tool, comma-separated) never offered",
       "A,B", on="config"),
    # set by swarmkit itself, or from Python only
    _o("refresh", "steps", "steps that skip the cache (what %swarm rerun sets)", on=""),
    _o("auto_local", "names", "roles whose 'auto' model became the embedded one (no key "
       "or base URL set; what swarmkit sets)", on=""),
    _o("judge_seed", "int", "the judge's seed (what repeat i of a comparison sets: i)",
       on=""),
    _o("prices", "prices", "(model, in, out) USD per 1M tokens; %swarm prices sets them "
       "in a notebook", flag="--price", on="cli"),
)

ROLE_FIELDS: tuple[str, ...] = tuple(o.attr for o in OPTIONS if o.role)
# Rows that are no SwarmConfig field: keywords read before the config is built (tools,
# checks, plan_from and the MCP tool lists by create_engine, task_template with tasks by
# SwarmConfig.with_options).
NOT_FIELDS: frozenset[str] = frozenset({"tools", "plan_from", "task_template", "mcp_tools",
                                        "mcp_exclude_tools", "checks"})
# NOT_FIELDS that are %swarm config keys: SwarmConfig.with_options checks and skips them,
# and the magic hands them to the tool loop with the session's MCP servers.
TOOL_CHOICE_KEYS: tuple[str, ...] = ("mcp_tools", "mcp_exclude_tools")
_BY_NAME = {o.name: o for o in OPTIONS}


def option_named(name: str) -> Option | None:
    """The row of a public option name (``planner_model`` gives the ``model`` row)."""
    found = _BY_NAME.get(name)
    if found is None:
        role, _, rest = name.partition("_")
        row = _BY_NAME.get(rest)
        if role in ROLE_NAMES and row is not None and row.role:
            return row
    return found


def public_name(attr: str) -> str:
    """The public option name of a ``SwarmConfig`` field (``max_workers`` -> ``workers``)."""
    for row in OPTIONS:
        if not row.role and row.attr == attr:
            return row.name
    return attr


def config_keys() -> tuple[str, ...]:
    """Every key ``%swarm config`` accepts: the rows on ``config``, with per-role names."""
    return tuple(name for row in OPTIONS if row.on("config") for name in row.names())


# -- the README's table ----------------------------------------------------------------

README_START = "<!-- options table: generated from swarmkit/config/options.py -->"
README_END = "<!-- end of the options table -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _flags(row: Option, surface: Surface) -> str:
    if not row.on(surface):
        return ""
    if row.kind == "bool":
        flag = row.flag_name
        if surface == "magic":
            switches = {"off": [f"--no-{flag[2:]}"], "on": [flag],
                        "both": [flag, f"--no-{flag[2:]}"]}[row.magic_switch]
            return ", ".join(f"`{switch}`" for switch in switches)
        return f"`{flag}`, `--no-{flag[2:]}`"
    flags = [flag for flag, _, _ in row.flags(surface)]
    if surface == "cli" and row.kind == "tools":
        return f"`{flags[0]} MODULE:NAME,...`"
    if surface == "cli" and row.kind == "schema":
        return "`--schema-file PATH` (a JSON schema)"
    if surface == "cli" and row.kind == "prices":
        return f"`{flags[0]} MODEL IN OUT` (repeatable)"
    return ", ".join(f"`{flag}`" for flag in flags)


def env_options() -> dict[str, str]:
    """``SWARMKIT_*`` variable -> the option it sets."""
    return {row.env: row.name for row in OPTIONS if row.env}


def markdown_table() -> str:
    """The options table in Markdown: option, ``%%swarm`` flag, ``jswarm run`` flag,
    environment variable, help."""
    lines = ["| option (`%swarm config`, Python) | `%%swarm` | `jswarm run` | environment "
             "| what it sets |", "|---|---|---|---|---|"]
    for row in OPTIONS:
        if not row.surfaces:
            continue
        name = f"`{row.name}`" + ("" if row.on("config") else " (Python only)")
        if row.role:
            name += " (and `planner_`/`worker_`/`reducer_` per role)"
        env = f"`{row.env}`" if row.env else "-"
        lines.append(f"| {name} | {_flags(row, 'magic') or '-'} | {_flags(row, 'cli') or '-'} "
                     f"| {env} | {_cell(row.help)} |")
    return "\n".join(lines)


def replace_readme_table(text: str) -> str:
    """``text`` (README.md) with the part between the table's markers regenerated."""
    head, start, rest = text.partition(README_START)
    _, end, tail = rest.partition(README_END)
    if not start or not end:
        raise ValueError("README.md has no options table markers")
    return f"{head}{README_START}\n{markdown_table()}\n{README_END}{tail}"
