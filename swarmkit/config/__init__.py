"""The swarm's configuration: its values, how they are checked, and the option table."""

from .options import OPTIONS, Option
from .swarmconfig import DEFAULT_KEY_ENV, ROLES, Role, RoleConfig, SwarmConfig

__all__ = ["DEFAULT_KEY_ENV", "OPTIONS", "ROLES", "Option", "Role", "RoleConfig", "SwarmConfig"]
