"""Test-only drivers, not shipped in swarmkit: a real Jupyter kernel (``kernel``) and
nbval over notebooks, offline and with no key (``notebooks``).

swarmkit's tests, ``benchmarks/`` and ``notebooks/`` (``conftest.py``, ``record.py``)
import them as ``tests.support.*`` from a checkout; users need ``swarmkit.testing``.
"""
