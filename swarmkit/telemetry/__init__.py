"""swarmkit.telemetry: a run's events as OpenTelemetry spans (GenAI semantic conventions).

``opentelemetry-api`` is an optional extra (``pip install "jupyter-swarmkit[otel]"``): nothing
here imports it until a run turns traces on (:func:`span_sinks`).
"""

from .enable import span_sinks
from .spans import SpanSink

__all__ = ["SpanSink", "span_sinks"]
