"""Test-only drivers, not shipped in swarmkit: a real Jupyter kernel (``kernel``), nbval
over notebooks, offline and with no key (``notebooks``), a batch run killed mid-way
(``batches``), and the fake key and FakeServer options every swarm test starts from
(``fakekey``, a pytest plugin that ``tests/conftest.py`` loads).

swarmkit's tests, ``benchmarks/`` and ``notebooks/`` (``conftest.py``, ``record.py``)
import them as ``tests.support.*`` from a checkout; users need ``swarmkit.testing``.
"""

__all__: list[str] = []
