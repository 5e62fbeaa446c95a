"""Option values as they are typed (text from a magic line, the environment or a file;
Python values from a call) turned into the types ``SwarmConfig`` and ``RoleConfig`` hold.

Every refusal is a one-line ``ConfigError`` naming the option as the user wrote it. The
kind of each field comes from the option table (``options``), so a new row needs no code
here unless its type is new. Ranges are ``validation``'s job, which names the limits.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .options import OPTIONS, Kind
from .outputschema import canonical_schema
from .tasks import given_tasks
from .validation import check_base_url

__all__ = ["check_tool_names", "coerce_role_value", "coerce_top", "number", "strict_int",
           "with_given_tasks"]


def with_given_tasks(options: dict[str, Any]) -> dict[str, Any]:
    """``tasks`` (with ``task_template``, which is read here and not kept) as a tuple of
    strings. Given tasks are the plan, so ``workers`` set in the same call cannot cut
    them: fewer workers than tasks is refused rather than dropping tasks silently."""
    template = options.pop("task_template", None)
    if "tasks" not in options:
        if template is not None:
            raise ConfigError("task_template needs tasks (a DataFrame) to fill; add tasks")
        return options
    tasks = given_tasks(options["tasks"], template)
    workers = options.get("workers", options.get("max_workers"))
    if workers is not None and strict_int("workers", workers) < len(tasks):
        raise ConfigError(
            f"workers {workers} is fewer than the {len(tasks)} given tasks: every given "
            "task gets a worker; drop workers (use concurrency to run fewer at once)"
        )
    return {**options, "tasks": tasks}


def check_tool_names(option: str, value: Any) -> None:
    """``mcp_tools`` / ``mcp_exclude_tools``: MCP tool names as ``NAME__tool``."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) for i in items):
        raise ConfigError(f"{option} must be MCP tool names, e.g. everything__echo,"
                          f"everything__add, got {value!r}")
    for item in (i.strip() for i in items):
        server, sep, tool = item.partition("__")
        if item and not (server and sep and tool):
            raise ConfigError(f"{option}: {item!r} is not an MCP tool's name; write "
                              "NAME__tool, e.g. everything__echo (%swarm mcp list shows them)")


def coerce_role_value(key: str, value: Any, option: str = "") -> Any:
    """``value`` as the RoleConfig field ``key`` needs; ``option`` is the name the user
    wrote (``planner_base_url``), for the message."""
    try:
        if key == "api_key_env":
            names = value.split(",") if isinstance(value, str) else list(value)
            names = [n.strip() for n in names if n.strip()]
            if not names:
                raise ConfigError("api_key_env needs at least one variable name")
            return tuple(names)
        if key == "max_tokens":
            return strict_int(key, value)
        if key == "seed":
            return strict_int(key, value)
        if key == "temperature":
            if isinstance(value, bool):
                raise ConfigError(f"temperature must be a number, got {value!r}")
            return float(value)
        if key == "base_url":
            return check_base_url(option or key, value)
        if key == "model":
            if not isinstance(value, str) or not value.strip():
                raise ConfigError(f"{key} must be a non-empty string, got {value!r}")
            return value.strip()
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{key} has a bad value {value!r}: {exc}") from None
    return value


def strict_int(key: str, value: Any) -> int:
    if isinstance(value, bool):
        raise ConfigError(f"{key} must be a whole number, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    raise ConfigError(f"{key} must be a whole number, got {value!r}")


def number(name: str, value: Any) -> float:
    """A float from a number or its text; True/False and other types are refused (the
    range, NaN and infinity are validation's job, which names the limits)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str, Decimal)):
        raise ConfigError(f"{name} must be a number, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a number, got {value!r}") from None


def _fields_of(kind: Kind) -> frozenset[str]:
    return frozenset(row.attr for row in OPTIONS if row.kind == kind and not row.role)


_INT_FIELDS = _fields_of("int")
_FLOAT_FIELDS = _fields_of("number")
_BOOL_FIELDS = _fields_of("bool")


def coerce_top(name: str, value: Any, option: str = "") -> Any:
    """``value`` as the field ``name`` needs; ``option`` is the alias the user wrote."""
    if name == "output_schema":
        return canonical_schema(value, option or name)
    if name in ("budget_usd", "confirm_over"):
        shown = "budget" if name == "budget_usd" else name
        try:
            amount = Decimal(str(value).strip().lstrip("$"))
        except InvalidOperation:
            raise ConfigError(f"{shown} must be a USD amount like 0.50, got {value!r}"
                              ) from None
        if not amount.is_finite():
            raise ConfigError(f"{shown} must be a finite USD amount, got {value!r}")
        return amount
    if name in _INT_FIELDS:
        return strict_int(option or name, value)
    if name in _FLOAT_FIELDS:
        return number(name, value)
    if name in _BOOL_FIELDS:
        if isinstance(value, str):
            lowered = value.strip().lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off"):
                return False
            raise ConfigError(f"{name} must be true or false, got {value!r}")
        return bool(value)
    if name in ("refresh", "auto_local"):
        steps = value.split(",") if isinstance(value, str) else list(value)
        return tuple(str(step).strip() for step in steps if str(step).strip())
    if name == "judge":
        return coerce_role_value("model", value, option or name)
    if name == "judge_base_url":
        return coerce_role_value("base_url", value, option or name)
    if name == "judge_api_key_env":
        return coerce_role_value("api_key_env", value, option or name)
    if name == "tasks":
        return tuple(value)
    if name == "prices":
        return tuple(tuple(str(x) for x in p) for p in value)
    if isinstance(value, Path):
        return str(value)
    return value
