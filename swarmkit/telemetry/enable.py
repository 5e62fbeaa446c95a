"""When a run emits spans, and the sink that emits them (``create_engine`` calls this)."""

from __future__ import annotations

from typing import Any

from .._version import __version__
from ..config.swarmconfig import SwarmConfig
from ..record.events import Sink
from .loader import configured_provider, otel_trace
from .spans import SpanSink

__all__ = ["span_sinks"]


def span_sinks(config: SwarmConfig, tracer_provider: Any | None = None) -> tuple[Sink, ...]:
    """The span sink of a run, or nothing.

    ``otel=True`` traces through ``tracer_provider`` or the global provider (a
    ConfigError when OpenTelemetry is not installed); ``otel=False`` never traces;
    unset (None), a run traces when it is given a provider or one is configured globally.
    """
    if config.otel is False:
        return ()
    if config.otel is None and tracer_provider is None:
        tracer_provider = configured_provider()
        if tracer_provider is None:
            return ()
    trace = otel_trace()
    provider = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
    tracer = provider.get_tracer("swarmkit", __version__)
    return (SpanSink(tracer, content=config.otel_content),)
