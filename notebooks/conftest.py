"""nbval over the tutorials: each notebook's kernel starts offline, with no key.

nbval starts a notebook's kernel while setting up its first cell, and the kernel takes
the environment of that moment. So the environment is made offline (no key variables,
no ``SWARMKIT_*``, the default endpoint on a closed port, this checkout importable) for
exactly that setup, and restored right after: the rest of the test session is untouched.
``SWARMKIT_LIVE`` (which turns replay cells live) is one of the variables dropped, so
``pytest --nbval`` always replays, whatever the shell that started it has set.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from swarmkit.magics.liveswitch import LIVE_ENV
from tests.support.notebooks import offline_env

ROOT = Path(__file__).resolve().parent.parent


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.clear()
    kernel = offline_env(saved, pythonpath=[ROOT])
    kernel.pop(LIVE_ENV, None)  # offline_env drops every SWARMKIT_*; this one above all
    os.environ.update(kernel)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)
