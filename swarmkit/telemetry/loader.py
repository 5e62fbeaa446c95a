"""The one door to OpenTelemetry: imported only when a run's traces are on.

swarmkit runs without ``opentelemetry-api`` installed; asking for traces then is a
one-line ConfigError saying what to install.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

from ..errors import ConfigError

__all__ = ["INSTALL_HINT", "configured_provider", "otel_trace"]

INSTALL_HINT = 'otel=True needs OpenTelemetry: pip install "jupyter-swarmkit[otel]"'


def otel_trace() -> ModuleType:
    """``opentelemetry.trace``, or a ConfigError naming the extra to install."""
    try:
        import opentelemetry.trace as trace
    except ImportError:
        raise ConfigError(INSTALL_HINT) from None
    return trace


def configured_provider() -> Any | None:
    """The global tracer provider when an application set one, else None.

    Never imports OpenTelemetry: an application that configured a provider has imported
    ``opentelemetry.trace`` already, and ``import swarmkit`` must stay light without it.
    The default provider (a proxy, or the no-op one) means nobody configured tracing.
    """
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None
    provider = trace.get_tracer_provider()
    if isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
        return None
    return provider
