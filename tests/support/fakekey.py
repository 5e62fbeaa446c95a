"""The preamble of every test that runs a swarm against the loopback FakeServer: the key
variable it names, the fixture that sets it, and the run's options or ``%%swarm`` line
(a pytest plugin: ``tests/conftest.py`` loads it, so the fixture is there in every test
directory).

Why one place: such a run needs a model, the server's URL and a key variable named (and
usually set: the client sends its value, the FakeServer takes any). Each test module used
to write that out again, with its own variable name, its own value and its own
``options``/``line_for``; a change to how a test run is pointed at its server (or a new
option every test wants) was a change in some thirty files.

Contract:

- ``KEY_ENV`` is the variable the helpers below name; ``FAKE_KEY`` the value the fixture
  gives it. The value is long enough for swarmkit to scrub it as a secret (it leaves
  values shorter than ``MIN_SECRET_CHARS`` alone, as placeholders) and distinctive, so a
  test may assert that it appears in no output, file or span.
- The ``fake_key`` fixture sets ``$KEY_ENV`` to ``FAKE_KEY`` for one test, undone after
  it, and returns the value. A module takes it for all of its tests with
  ``pytestmark = pytest.mark.usefixtures("fake_key")``, a directory with an autouse
  fixture that asks for it (``tests/reliability/conftest.py``). It is not autouse here: a
  test that needs the variable unset (what a missing key says, what ``auto`` chooses
  without one) gets the environment as the root conftest leaves it.
- ``run_options(server, **extra)`` are ``swarmkit.run_sync``'s keyword arguments for a run
  against ``server`` (a FakeServer or a base URL; None for no URL and no key variable):
  ``model`` (``MODEL``), ``base_url`` and ``api_key_env``, with ``extra`` on top (it may
  override them); ``Options`` is its type, for a fixture or parameter that hands such a
  builder on. ``swarm_line(server, extra, flags=...)`` is the same as a ``%%swarm`` line (or a

  ``swarmkit run`` command line, once split), ``flags`` before ``extra``. Both name
  ``KEY_ENV`` unless given ``key_env=`` (another variable, or None for none): on loopback
  an unset variable gets swarmkit's placeholder key, so a magics test need not set it.
- A module's own defaults are a ``functools.partial`` of these, not a copy:
  ``options = partial(run_options, **QUICK_RETRIES, history=False)``,
  ``line_for = partial(swarm_line, flags="--workers 3")``. ``QUICK_RETRIES`` is a backoff
  that keeps a retried fault to milliseconds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

import pytest

from swarmkit.testing import FakeServer

__all__ = [
    "FAKE_KEY",
    "KEY_ENV",
    "MODEL",
    "QUICK_RETRIES",
    "Options",
    "fake_key",
    "run_options",
    "swarm_line",
]

KEY_ENV: Final = "SWARMKIT_TEST_KEY"
FAKE_KEY: Final = "sk-swarmkit-fake-key-CANARY-7f3a9c2e"
MODEL: Final = "gpt-4.1-mini"
QUICK_RETRIES: Final[Mapping[str, float]] = {"backoff_base": 0.001, "backoff_max": 0.05}

Options = Callable[..., dict[str, Any]]
"""What ``run_options`` (or a partial of it) is: ``options(server, **extra)``."""


@pytest.fixture
def fake_key(monkeypatch: pytest.MonkeyPatch) -> str:
    """``$SWARMKIT_TEST_KEY`` set to ``FAKE_KEY`` for this test; the value."""
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    return FAKE_KEY


def _base_url(server: FakeServer | str) -> str:
    return server if isinstance(server, str) else server.base_url


def run_options(server: FakeServer | str | None, *, key_env: str | None = KEY_ENV,
                **extra: Any) -> dict[str, Any]:
    """``run_sync``'s keyword arguments for a run against ``server``: the model, its base
    URL and ``key_env`` as ``api_key_env`` (neither when ``server`` is None, no
    ``api_key_env`` when ``key_env`` is None), then ``extra``."""
    where: dict[str, Any] = {}
    if server is not None:
        where["base_url"] = _base_url(server)
        if key_env is not None:
            where["api_key_env"] = key_env
    return {"model": MODEL, **where, **extra}


def swarm_line(server: FakeServer | str, extra: str = "", *, flags: str = "",
               key_env: str | None = KEY_ENV, model: str = MODEL) -> str:
    """The ``%%swarm`` line for a run against ``server`` (a FakeServer or a base URL):
    ``--model``, ``--base-url``, ``--api-key-env key_env`` (none when it is None), then
    ``flags`` and ``extra``, one space apart."""
    key = f"--api-key-env {key_env}" if key_env is not None else ""
    parts = (f"--model {model}", f"--base-url {_base_url(server)}", key, flags, extra)
    return " ".join(part.strip() for part in parts if part.strip())
