"""Public test helpers: a loopback OpenAI-compatible server to run swarms against.

    from swarmkit.testing import FakeServer, FakeReply, Fault, FaultRule

    with FakeServer(faults=[FaultRule(Fault.rate_limit(retry_after=0.1), attempts=1)]) as s:
        run = swarmkit.run_sync("task", base_url=s.base_url, api_key_env="ANY_VAR")
    assert s.count("worker-*") == 8

``python -m swarmkit.testing --port 0`` runs one in the foreground (see ``__main__``).
Needs the ``testing`` extra (aiohttp).
"""

from __future__ import annotations

from .faults import Fault, FaultKind, FaultRule
from .invariants import run_problems
from .replies import (
    FakeReply,
    FakeRequest,
    RecordedRequest,
    ToolCallSpec,
    default_reply,
    estimate_tokens,
    role_of_step,
)
from .server import FakeServer, Handler
from .shell import swarm_shell
from .waiting import wait_until

__all__ = [
    "FakeReply",
    "FakeRequest",
    "FakeServer",
    "Fault",
    "FaultKind",
    "FaultRule",
    "Handler",
    "RecordedRequest",
    "ToolCallSpec",
    "default_reply",
    "estimate_tokens",
    "role_of_step",
    "run_problems",
    "swarm_shell",
    "wait_until",
]
