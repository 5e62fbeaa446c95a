"""What values a ``SwarmConfig`` accepts: numbers in range, base URLs that can be reached.

Every check names the public option and says what it takes, in one line, so a bad value
is a :class:`~swarmkit.errors.ConfigError` when the config is built, never a hang (a NaN
rate never admits a call), an ``OverflowError`` or a ``ValueError`` from the HTTP stack
at the first call. ``SwarmConfig.validate`` runs :func:`validate_config`; the option
coercion runs :func:`check_base_url` with the exact option name the user wrote.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol
from urllib.parse import urlsplit

from ..errors import ConfigError
from .options import ROLE_NAMES
from .tasks import one_process_limit

__all__ = ["MAX_TREE_DEPTH", "Checked", "check_base_url", "check_cluster", "check_number",
           "validate_config"]


class _CheckedRole(Protocol):
    @property
    def base_url(self) -> str | None: ...
    @property
    def max_tokens(self) -> int: ...
    @property
    def temperature(self) -> float | None: ...
    @property
    def seed(self) -> int | None: ...


class Checked(Protocol):
    """What :func:`validate_config` reads: a ``SwarmConfig`` (a Protocol, so this module
    needs no import of ``swarmconfig``, which imports it)."""

    @property
    def budget_usd(self) -> Decimal | None: ...
    @property
    def batch(self) -> bool: ...
    @property
    def depth(self) -> int: ...
    @property
    def confirm_over(self) -> Decimal | None: ...
    @property
    def cluster(self) -> str | None: ...
    @property
    def tasks(self) -> tuple[str, ...]: ...
    @property
    def replay(self) -> str | None: ...
    def role(self, role: Any) -> _CheckedRole: ...

_EXAMPLE_URL = "http://127.0.0.1:8000/v1"
# Characters that can never be part of a host name (a typo, or text pasted with the URL).
_BAD_HOST_CHARS = frozenset(' \t\r\n<>"{}|\\^`')


@dataclass(frozen=True, slots=True)
class _Range:
    """The numbers one option takes: ``low`` (exclusive when ``above``) up to ``high``."""

    attr: str
    say: str  # the accepted range in words, after "<name> must be"
    low: float
    above: bool = False
    high: float = math.inf
    whole: bool = False
    optional: bool = False  # None (unset) means "no limit"
    name: str = ""  # the public option name, when it differs from ``attr``


# The deepest tree a run may ask for (a file may hold up to record.fileshapes.MAX_DEPTH).
MAX_TREE_DEPTH = 8

_RANGES = (
    _Range("max_workers", "at least 1", 1, whole=True, name="workers"),
    _Range("concurrency", "at least 1", 1, whole=True),
    _Range("budget_tokens", "positive", 0, above=True, whole=True, optional=True),
    _Range("max_attempts", "at least 1", 1, whole=True),
    _Range("call_timeout", "a positive number of seconds", 0, above=True),
    _Range("run_timeout", "a positive number of seconds", 0, above=True, optional=True),
    _Range("backoff_base", "0 or more seconds", 0),
    _Range("backoff_max", "0 or more seconds", 0),
    _Range("max_tool_hops", "0 or more", 0, whole=True),
    _Range("tool_concurrency", "at least 1", 1, whole=True),
    _Range("max_tool_errors", "at least 1", 1, whole=True),
    _Range("max_tool_result_chars", "at least 1", 1, whole=True),
    _Range("max_tool_calls_per_turn", "at least 1", 1, whole=True),
    _Range("tool_timeout", "a positive number of seconds", 0, above=True),
    _Range("rpm", "positive", 0, above=True, optional=True),
    _Range("tpm", "positive", 0, above=True, optional=True),
    _Range("rate_window", "positive seconds", 0, above=True),
    _Range("batch_poll", "positive seconds", 0, above=True),
    _Range("start_jitter", "between 0 and 0.25 seconds", 0, high=0.25, optional=True),
    _Range("reducer_max_input_tokens", "at least 1024", 1024, whole=True, optional=True),
    _Range("depth", f"between 1 and {MAX_TREE_DEPTH}", 1, high=MAX_TREE_DEPTH, whole=True),
    _Range("max_children", "at least 2", 2, whole=True),
    _Range("max_total_workers", "at least 1", 1, whole=True, optional=True),
    # Each repeat is a whole swarm per variant, all at once: a bound, not a budget.
    _Range("repeat", "at least 1 and at most 100", 1, high=100, whole=True),
    _Range("shards", "at least 1", 1, whole=True, optional=True),
)


def check_number(
    name: str, value: Any, say: str, low: float, *, above: bool = False,
    high: float = math.inf, whole: bool = False, optional: bool = False,
) -> None:
    """Raise a ConfigError naming ``name`` unless ``value`` is a finite number in range."""
    if value is None and optional:
        return
    kind = int if whole else (int, float, Decimal)
    if isinstance(value, bool) or not isinstance(value, kind):
        raise ConfigError(f"{name} must be {'a whole' if whole else 'a'} number, got {value!r}")
    finite = math.isfinite(value)
    if not finite or value < low or (above and value == low) or value > high:
        hint = ""
        if not finite and not math.isnan(value):
            hint = "; leave it unset for no limit" if optional else "; give a finite number"
        shown = value if isinstance(value, Decimal) else repr(value)  # -1, not Decimal('-1')
        raise ConfigError(f"{name} must be {say}, got {shown}{hint}")


def validate_config(config: Checked) -> None:
    """Raise a one-line ConfigError for the first option of ``config`` that is wrong."""
    for rule in _RANGES:
        check_number(rule.name or rule.attr, getattr(config, rule.attr), rule.say, rule.low,
                     above=rule.above, high=rule.high, whole=rule.whole,
                     optional=rule.optional)
    if config.budget_usd is not None:
        check_number("budget", config.budget_usd, "a positive USD amount", 0, above=True)
    if config.batch and config.depth > 1:
        raise ConfigError("batch: a run with depth > 1 cannot go to the Batch API (a split "
                          "is a tool call answered live); give depth=1 or drop batch")
    if config.confirm_over is not None:
        check_number("confirm_over", config.confirm_over, "a USD amount, 0 or more", 0)
    if config.cluster is None:
        if not config.replay:
            # A replay makes no call and runs in the kernel whatever cluster says: a
            # sharded run's recording of more tasks replays in one process.
            one_process_limit(len(config.tasks))
    else:
        check_cluster(config.cluster)
        if config.depth > 1:
            # A split runs its child swarm in the engine of the worker that made it, and a
            # shard's engine has neither the run's slots nor its budget: not yet sharded.
            raise ConfigError("cluster: a tree (depth > 1) runs in one process for now; give "
                              "depth=1 to shard the workers, or drop cluster to run the tree")
    urls = [config.role(role).base_url for role in ROLE_NAMES]
    for role, url in zip(ROLE_NAMES, urls, strict=True):
        rc = config.role(role)
        check_number(f"{role} max_tokens", rc.max_tokens, "at least 1", 1, whole=True)
        check_number("temperature", rc.temperature, "between 0 and 2", 0, high=2,
                     optional=True)
        if rc.seed is not None and (isinstance(rc.seed, bool) or not isinstance(rc.seed, int)):
            raise ConfigError(f"seed must be a whole number, got {rc.seed!r}")
        if url is not None:
            # One name when the three roles share the URL (the usual base_url=...).
            check_base_url("base_url" if len(set(urls)) == 1 else f"{role}_base_url", url)


def check_cluster(value: Any) -> str:
    """``value`` if it names where a cluster run goes ("ray", "ray:auto" or
    "ray://HOST:PORT"), else a one-line ConfigError naming ``cluster``."""
    if isinstance(value, str):
        if value in ("ray", "ray:auto"):
            return value
        if value.startswith("ray://"):
            host, _, port = value[len("ray://"):].rpartition(":")
            if host and port.isdigit() and 0 < int(port) < 65536 and "/" not in host:
                return value
    raise ConfigError(f"cluster must be 'ray', 'ray:auto' or 'ray://HOST:PORT', got {value!r}")


def check_base_url(option: str, url: Any) -> str:
    """``url`` stripped, if an http(s) URL with a host and a usable port; else a ConfigError
    naming ``option`` (``base_url``, ``planner_base_url``, ...).

    The URL in the message has any userinfo masked: it may hold a key.
    """
    if not isinstance(url, str) or not url.strip():
        raise ConfigError(f"{option} must be a non-empty string, got {url!r}")
    url = url.strip()
    shown = _masked(url)
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        reason = str(exc)[:1].lower() + str(exc)[1:]
        raise ConfigError(f"{option} is not a valid URL ({reason}): {shown!r}; write it like "
                          f"{_EXAMPLE_URL}") from None
    if parts.scheme not in ("http", "https"):
        raise ConfigError(f"{option} must be an http:// or https:// URL such as "
                          f"{_EXAMPLE_URL}, got {shown!r}")
    host = parts.hostname or ""
    if not host or _BAD_HOST_CHARS.intersection(host):
        raise ConfigError(f"{option} has no valid host name: {shown!r}; write it like "
                          f"{_EXAMPLE_URL}")
    if "[" in parts.netloc:
        try:
            ipaddress.IPv6Address(host.split("%", 1)[0])
        except ValueError:
            raise ConfigError(f"{option} has a bad IPv6 address [{host}]: {shown!r}") from None
    if port == 0:
        raise ConfigError(f"{option} has port 0, which cannot be connected to: {shown!r}")
    return url


def _masked(url: str) -> str:
    """``url`` with whatever sits before an ``@`` in its authority replaced by ``***``
    (works on text that ``urlsplit`` refuses, too)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        authority = "***@" + authority.rsplit("@", 1)[1]
    return f"{scheme}{sep}{authority}{slash}{path}"
