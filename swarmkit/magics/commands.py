"""``%swarm`` subcommands: config, prices, last, cancel; and the table that lists them.

A subcommand is one row in :data:`COMMANDS`: its usage, one line of help, and
``"module:function"``, imported on first use so ``%load_ext`` stays fast. The function
is called as ``function(session, argv)`` (a ``session.Session``: the ``SwarmMagics``)
with the words after the subcommand's name and returns what the cell shows (or None).
Raise ``UsageError`` for bad input.
"""

from __future__ import annotations

import difflib
import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from IPython.core.error import UsageError
from IPython.utils.process import arg_split

from ..config.options import (
    NOT_FIELDS,
    ROLE_FIELDS,
    UNSET_VALUES,
    config_keys,
    option_named,
    public_name,
)
from ..config.swarmconfig import ROLES, SwarmConfig
from ..config.urls import redact_url
from ..credentials.scrub import one_line
from ..engine.prices import PriceTable
from ..errors import ConfigError
from .bridge import summary_line
from .extension import swarm_magics
from .flags import NOTEBOOK_DEFAULTS
from .output import SmallTable, publish, run_bundle
from .session import Session

__all__ = [
    "COMMANDS",
    "UNSET_VALUES",
    "Command",
    "cancel_command",
    "check_config_key",
    "commands_help",
    "config_command",
    "last_command",
    "prices_command",
    "split_args",
    "stop_command",
    "swarm_config",
]


@dataclass(frozen=True, slots=True)
class Command:
    usage: str
    help: str
    target: str  # "package.module:function"

    def load(self) -> Callable[[Session, list[str]], Any]:
        module, _, name = self.target.partition(":")
        return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


COMMANDS: dict[str, Command] = {
    "config": Command("config [key=value ...] | config reset",
                      "show or set this session's defaults (model, budget, workers, ...)",
                      "swarmkit.magics.commands:config_command"),
    "prices": Command("prices [MODEL IN OUT [CACHED]] | prices TEXT",
                      "show prices (USD per 1M tokens), filter them, or add one",
                      "swarmkit.magics.commands:prices_command"),
    "last": Command("last", "show the last run's tables again",
                    "swarmkit.magics.commands:last_command"),
    "cancel": Command("cancel", "stop the running --background swarms",
                      "swarmkit.magics.commands:cancel_command"),
    "stop": Command("stop [--merge]",
                    "stop the --background swarms; --merge reduces the workers that finished",
                    "swarmkit.magics.commands:stop_command"),
    "history": Command("history [N]", "list the N most recent runs (default 10)",
                       "swarmkit.magics.history:history_command"),
    "show": Command("show RUN", "show a past run's tables (a run id prefix is enough)",
                    "swarmkit.magics.history:show_command"),
    "rerun": Command("rerun RUN --worker K [--out NAME]",
                     "re-run worker K (in a tree, a dotted id: 2.1) of a past run and "
                     "what merges it; the rest is cached",
                     "swarmkit.magics.history:rerun_command"),
    "resume": Command("resume [RUN] [--out NAME]",
                      "continue a run that did not finish (default: the last one); "
                      "its answered calls come from the history",
                      "swarmkit.magics.resume:resume_command"),
    "diff": Command("diff RUN_A RUN_B", "plan, per-worker cost and answers side by side",
                    "swarmkit.magics.history:diff_command"),
    "mcp": Command("mcp add|list|remove ...",
                   "MCP servers: add NAME -- CMD [ARGS], list, remove NAME (tools for %%swarm)",
                   "swarmkit.magics.tools:mcp_command"),
    "export": Command("export [RUN] PATH.ipynb [--force]",
                      "write a run as a notebook + cassette that replays offline (nbval)",
                      "swarmkit.magics.export:export_command"),
}


def commands_help() -> str:
    width = max(len(c.usage) for c in COMMANDS.values())
    lines = ["line magic:"]
    lines += [f"  %swarm {c.usage.ljust(width)}  {c.help}" for c in COMMANDS.values()]
    return "\n".join(lines)


def split_args(line: str, where: str) -> list[str]:
    try:
        return arg_split(line, posix=True, strict=True)
    except ValueError as exc:
        raise UsageError(f"{where}: cannot split the arguments ({exc}); check the quotes") from None


# -- config ------------------------------------------------------------------------------

_VALUE_WIDTH = 72
# The keys the config table shows besides the role fields (every key can be set); any
# other key is shown once the session sets it.
_SHOWN = ("workers", "concurrency", "budget", "budget_tokens", "rpm", "tpm", "call_timeout",
          "run_timeout", "cache", "record", "replay", "history_path")


def check_config_key(key: str, where: str) -> None:
    """A UsageError unless ``key`` is one of the option table's ``%swarm config`` keys."""
    if key == "prices":
        raise UsageError(f"{where}: set prices with %swarm prices MODEL IN OUT")
    keys = config_keys()
    if key in keys:
        return
    named = public_name(key)
    close = [named] if named != key else difflib.get_close_matches(key, keys, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]}?)" if close else ""
    raise UsageError(f"{where}: unknown option {key!r}{hint}; %swarm config lists the keys")


def _show(value: Any) -> str:
    if isinstance(value, str) and "://" in value:
        return redact_url(value)  # a base URL's userinfo is a credential
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    # A prompt or a schema on one line, cut: the table is an overview, the config whole.
    return "-" if value is None else one_line(str(value), _VALUE_WIDTH)


def config_table(config: SwarmConfig, session: dict[str, Any]) -> SmallTable:
    rows: list[tuple[str, str, str]] = []

    def add(key: str, value: Any) -> None:
        rows.append((key, _show(value), "session" if key in session else ""))

    for name in ROLE_FIELDS:
        values = [getattr(config.role(role), name) for role in ROLES]
        if all(v == values[0] for v in values):
            add(name, values[0])
        else:
            for role, value in zip(ROLES, values, strict=True):
                add(f"{role}_{name}", value)
    for key in _SHOWN:
        row = option_named(key)
        add(key, getattr(config, row.attr if row is not None else key))
    # Every other key the session set is shown too (judge, rubric, repeat, prompts...):
    # a setting that takes effect is never hidden from the table.
    for key in session:
        row = option_named(key)
        if key in _SHOWN or key == "prices" or (row is not None and row.role):
            continue
        if row is None or row.name in NOT_FIELDS:  # no config field (the MCP tool lists)
            add(key, session[key])
        else:
            add(key, getattr(config, row.attr))
    return SmallTable("swarm config for this session", ("key", "value", "set by"), rows,
                      "set with %swarm config key=value; key= unsets; flags override per cell")


def config_command(magics: Session, argv: list[str]) -> SmallTable:
    options = dict(magics.session_options)
    if argv == ["reset"]:
        options = {"prices": options["prices"]} if "prices" in options else {}
    else:
        for word in argv:
            key, sep, value = word.partition("=")
            key = key.strip().lstrip("-").replace("-", "_")
            if not sep or not key:
                raise UsageError(f"%swarm config: expected key=value, got {word!r}")
            check_config_key(key, "%swarm config")
            if value.strip().lower() in UNSET_VALUES:
                options.pop(key, None)
            else:
                options[key] = value
    return _set_session(magics, options, "%swarm config")


def _set_session(magics: Session, options: dict[str, Any], where: str) -> SmallTable:
    """Validate ``options`` as the session's defaults, keep them, and show the table."""
    try:
        config = SwarmConfig.from_env(os.environ, NOTEBOOK_DEFAULTS).with_options(**options)
    except ConfigError as exc:
        raise UsageError(f"{where}: {exc}") from None
    magics.session_options = options
    return config_table(config, options)


def swarm_config(*, reset: bool = False, **options: Any) -> SmallTable:
    """``%swarm config`` from Python: ``swarm_config(system_prompt="Answer in {lang}")``.

    IPython expands ``{expression}`` and ``$name`` on a magic line but never in a call's
    arguments, so a prompt with braces is set here exactly as written (the cells that
    ``run.export`` writes use it for such values); every value is taken as given, and
    ``None`` unsets a key. ``reset=True`` first drops what the session set. Needs
    ``%load_ext swarmkit``.
    """
    from IPython import get_ipython

    shell = get_ipython()
    magics = None if shell is None else swarm_magics(shell)
    if magics is None:
        raise UsageError("swarm_config: load the extension first with %load_ext swarmkit")
    for key in options:
        check_config_key(key, "swarm_config")
    session = dict(magics.session_options)
    kept = {"prices": session["prices"]} if "prices" in session else {}
    merged = {**(kept if reset else session), **options}
    return _set_session(magics, {k: v for k, v in merged.items() if v is not None},
                        "swarm_config")


# -- prices ------------------------------------------------------------------------------


def prices_command(magics: Session, argv: list[str]) -> SmallTable:
    session = [tuple(row) for row in magics.session_options.get("prices", ())]
    if len(argv) in (3, 4):
        row = tuple(argv)
        try:
            PriceTable.with_overrides([row])
        except ConfigError as exc:
            raise UsageError(f"%swarm prices: {exc}") from None
        session = [r for r in session if r[0].lower() != row[0].lower()] + [row]
        magics.session_options["prices"] = tuple(session)
        return _price_table(session, argv[0], exact=True)
    if len(argv) > 1:
        raise UsageError(
            "%swarm prices: expected MODEL IN OUT [CACHED] in USD per 1M tokens "
            "(e.g. %swarm prices my-model 0.50 1.50), or one word to filter by"
        )
    return _price_table(session, argv[0] if argv else "")


def _price_table(session: list[tuple[str, ...]], text: str, exact: bool = False) -> SmallTable:
    overridden = {row[0].lower() for row in session}
    rows = []
    for model, price in PriceTable.with_overrides(session).rows():
        if (model != text.lower()) if exact else (text.lower() not in model):
            continue
        cached = "-" if price.cached_input is None else f"{price.cached_input}"
        rows.append((model, f"{price.input}", f"{price.output}", cached,
                     "session" if model in overridden else "built-in"))
    note = "add or change one with %swarm prices MODEL IN OUT [CACHED]"
    return SmallTable("prices, USD per 1M tokens", ("model", "input", "output", "cached input",
                                                   "source"), rows, note)


# -- last, cancel, stop ------------------------------------------------------------------------


def last_command(magics: Session, argv: list[str]) -> None:
    if argv:
        raise UsageError("%swarm last: takes no arguments")
    if magics.last_run is None:
        raise UsageError("%swarm last: no swarm has run in this session yet")
    publish(run_bundle(magics.last_run))


def cancel_command(magics: Session, argv: list[str]) -> None:
    if argv:
        raise UsageError("%swarm cancel: takes no arguments")
    _stop_background(magics, merge=False)


def stop_command(magics: Session, argv: list[str]) -> None:
    if argv not in ([], ["--merge"]):
        raise UsageError("%swarm stop: takes only --merge (reduce the workers that finished)")
    _stop_background(magics, merge=bool(argv))


def _stop_background(magics: Session, *, merge: bool) -> None:
    """Cancel (or stop and merge) every running background swarm and report each one.

    A merge waits for the reducer's call; an interrupt during that wait leaves it
    merging in the background (its tables still replace its dashboard)."""
    running = [(h, names) for h, names in magics.background.items() if not h.done()]
    if not running:
        print("no background swarm is running")
        return
    for handle, _names in running:
        handle.stop(merge=merge)
    for handle, names in running:
        if merge:
            try:
                run = handle.result()
            except KeyboardInterrupt:
                print("the reducer is still merging; the Run goes to _swarm when it ends")
                return
            except Exception:  # the outcome is in the partial run and its error
                run = handle.run
        else:
            run = handle.cancel_and_collect("cancelled")
        magics.store(run, names)
        print(summary_line(run, "stopped" if merge else "cancelled", names))
