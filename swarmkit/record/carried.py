"""``CarriedCall``: a model call made for a run before the run began (the planner's, made
by ``swarmkit.plan``), which the run takes over rather than makes again.

The engine asks its caller for a carried call's request like any call's, at the start of
the run; the caller answers it as it was answered then (the call store from the plan's
recorded answer, a replay from its cassette), so the Run, its budget, its history row and
its cassette hold the call exactly as a run that made it itself would.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..config.swarmconfig import Role
from .modelcall import ChatRequest

__all__ = ["CarriedCall"]


@dataclass(frozen=True, slots=True)
class CarriedCall:
    """One carried call: its role, its step (``planner``) and the request it sent."""

    role: Role
    step: str
    request: ChatRequest
