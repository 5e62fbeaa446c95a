"""One local Ray for the whole pytest session (Ray's testing guide: starting Ray is the
slow part, so tests share one), with 2 CPUs and no dashboard. Every test here is marked
``ray`` and skipped, with the reason, when the ``ray`` extra is not installed."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import pytest


@pytest.fixture(scope="session")
def local_ray() -> Iterator[ModuleType]:
    ray = pytest.importorskip("ray", reason='the ray extra is not installed: pip install '
                                            '"jupyter-swarmkit[ray]"')
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, logging_level="warning")
    yield ray
    if started:
        ray.shutdown()
