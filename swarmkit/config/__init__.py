"""The swarm's configuration: its values, how they are checked, and the option table."""

from .swarm import DEFAULT_KEY_ENV, ROLES, Role, RoleConfig, SwarmConfig

__all__ = ["DEFAULT_KEY_ENV", "ROLES", "Role", "RoleConfig", "SwarmConfig"]
