"""Public test helpers, for testing your own swarms, sinks and notebooks without a key.

    from swarmkit.testing import FakeServer, FakeReply, Fault, FaultRule

    with FakeServer(faults=[FaultRule(Fault.rate_limit(retry_after=0.1), attempts=1)]) as s:
        run = swarmkit.run_sync("task", base_url=s.base_url, api_key_env="ANY_VAR")
    assert s.count("worker-*") == 8

What is public (every name in ``__all__``; the README's "Testing your own swarms"):

- ``FakeServer`` (``server``): a real OpenAI-compatible HTTP server on 127.0.0.1, with
  scripted replies (``FakeReply``, ``FakeRequest``, ``ToolCallSpec``, ``default_reply``:
  ``replies``), latency, per-key RPM/TPM limits and injected faults (``Fault``,
  ``FaultRule``: ``faults``). ``python -m swarmkit.testing --port 0`` runs one alone.
  It serves the Batch API too (``batches``: ``/v1/files``, ``/v1/batches``, each line
  answered like a live request, a ``Fault`` as an error-file line, ``batch_expire_after=``
  for expiry, cancel); what it received is in ``server.batches`` (``FakeBatches``).
- ``swarm_shell()`` (``shell``): a real IPython shell with ``%load_ext swarmkit`` done.
- ``run_problems(run)`` (``invariants``): every inconsistency in a Run; empty when sound.
- ``synthetic_events()`` / ``synthetic_run()`` (``synthetic``): a deterministic,
  realistic event stream (and the Run it folds into) at any scale, with no server: for
  testing a ``Sink`` of your own (``swarmkit.run(sinks=...)``) or a display.
- ``split_script(...)`` / ``split_everywhere(n)`` (``splits``): handlers whose workers
  call ``split_task``, for a tree (``depth`` > 1); ``split_reply(subtasks)`` is one such
  reply and ``offers_split(request)`` says whether a request offers the tool.
- ``wait_until(condition)`` (``waiting``): poll for what another thread or process does
  (a ``--background`` run, the server), without a fixed sleep.

``_limits`` and ``_responses`` are FakeServer's own parts. The kernel and nbval drivers
swarmkit's own tests use are not shipped: they live in the checkout's ``tests/support``.
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
from .splits import offers_split, split_everywhere, split_reply, split_script
from .synthetic import synthetic_events, synthetic_run
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
    "offers_split",
    "role_of_step",
    "run_problems",
    "split_everywhere",
    "split_reply",
    "split_script",
    "swarm_shell",
    "synthetic_events",
    "synthetic_run",
    "wait_until",
]
