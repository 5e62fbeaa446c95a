"""A replay asks what the recording asked: the request-shaping options come from it.

A replay matches each request by its content, so a replayed run must build the very
requests the recorded one sent. Options that shape them (the option table's rows on the
``replay`` surface: models, prompts, token limits, sampling, the worker count, the
reducer, typed outputs; and the judge) are therefore taken from the cassette's recorded
config, over whatever the session holds as defaults (``%swarm config``, ``SWARMKIT_*``
variables, a ``config=`` base), so an exported notebook replays the same in any kernel.
Options given for the replay itself (a ``%%swarm`` flag, a keyword of ``swarmkit.run``)
are applied after this and still win: a changed prompt there is a ``ReplayMiss``, as a
replay promises. Where the calls would go (base URLs, key variables) is not part of a
request and stays the session's.
"""

from __future__ import annotations

from dataclasses import replace

from ..config.options import OPTIONS
from ..config.swarmconfig import ROLES, SwarmConfig
from ..errors import CassetteError, ConfigError
from .cassette import Cassette

__all__ = ["REQUEST_FIELDS", "REQUEST_ROLE_FIELDS", "with_recorded_requests"]

# Not part of a request's fingerprint: where it goes and with which key.
_ENDPOINT_FIELDS = frozenset({"base_url", "api_key_env"})
REQUEST_ROLE_FIELDS: tuple[str, ...] = tuple(
    row.attr for row in OPTIONS if row.role and row.on("replay")
    and row.attr not in _ENDPOINT_FIELDS)
# The judge asks its own requests (its model, rubric and seed); it has no replay row
# because an export passes it from the recording by itself (Cassette.resolve_config).
REQUEST_FIELDS: tuple[str, ...] = (
    *(row.attr for row in OPTIONS if not row.role and row.on("replay")),
    "judge", "rubric", "judge_seed")


def with_recorded_requests(cassette: Cassette, config: SwarmConfig) -> SwarmConfig:
    """``config`` with the recording's request-shaping options in place of its own."""
    try:
        data = dict(cassette.run.get("config") or {})
        for name, role in config.summary().items():
            if name in ROLES:  # a role the file leaves out keeps the session's values
                data.setdefault(name, role)
        recorded = SwarmConfig.from_summary(data)
        roles = {name: replace(config.role(name), **{
            field: getattr(recorded.role(name), field) for field in REQUEST_ROLE_FIELDS})
            for name in ROLES}
        merged = replace(config, **roles,
                         **{field: getattr(recorded, field) for field in REQUEST_FIELDS})
        merged.validate()
    except (ConfigError, KeyError, TypeError, ValueError) as exc:
        raise CassetteError(f"cassette {cassette.source} has a config swarmkit cannot use "
                            f"({exc}); re-record it with --record") from None
    return merged
