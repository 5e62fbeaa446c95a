"""Recording a run into a Cassette, from the call store's notes and the run's events.

The call store knows each request and response; the events know the figures the tables
show (start, latency, cost), measured by the engine. Joining the two here means the
cassette holds exactly what the recording run displayed, so replay is byte-identical.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._version import __version__
from ..record.events import (
    CallFinished,
    CallRetried,
    Event,
    PlanReviewed,
    RunFinished,
    RunStarted,
)
from ..record.modelcall import CallSource, ChatRequest, ChatResponse, ToolKey, ToolOutcome
from .cassette import Cassette, RecordedCall, RecordedTool
from .packedcalls import RecordedCalls

__all__ = ["CassetteBuilder"]


@dataclass(frozen=True, slots=True)
class _Served:
    """What the call store saw of one call, waiting for the engine's CallFinished."""

    request: ChatRequest
    occurrence: int
    response: ChatResponse | None
    source: CallSource
    error_type: str | None




class CassetteBuilder:
    """A sink that builds the run's :class:`Cassette` and hands it over at RunFinished.

    ``on_finished`` runs for every outcome (completed, failed, cancelled), so even an
    interrupted run leaves a partial recording; but not for a dry-run (``planned``): it
    made only its plan, which holds nothing to replay or export.
    """

    def __init__(self, on_finished: Callable[[Cassette], None] | None = None) -> None:
        self._on_finished = on_finished
        self._run: dict[str, Any] = {}
        self._served: dict[tuple[str, str], list[_Served]] = defaultdict(list)
        self._retries: dict[str, list[dict[str, Any]]] = defaultdict(list)
        # Compressed as they are recorded: at scale the largest thing a run keeps.
        self._calls = RecordedCalls()
        self._tools: list[RecordedTool] = []
        self.cassette: Cassette | None = None

    @property
    def calls(self) -> tuple[RecordedCall, ...]:
        """The calls recorded so far (a plan's, which its run carries: ``CallStore.carry``)."""
        return tuple(self._calls)

    # -- notes from the call store -------------------------------------------------------

    def served(
        self,
        step: str,
        request: ChatRequest,
        occurrence: int,
        response: ChatResponse | None,
        source: CallSource = "live",
        error_type: str | None = None,
    ) -> None:
        key = (step, request.fingerprint())
        self._served[key].append(_Served(request, occurrence, response, source, error_type))

    def tool(self, key: ToolKey, occurrence: int, outcome: ToolOutcome) -> None:
        self._tools.append(RecordedTool(
            step=key.step, hop=key.hop, name=key.name, arguments=key.arguments,
            occurrence=occurrence, result=outcome.result, error=outcome.error,
            duration=outcome.duration, started=outcome.started,
        ))

    # -- events ----------------------------------------------------------------------------

    def on_event(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            self._run = {
                "run_id": event.run_id, "started_at": event.started_at, "task": event.task,
                "config": event.config, "status": "running", "duration": 0.0,
            }
        elif isinstance(event, PlanReviewed) and self._run:
            self._run["review"] = event.review.to_dict()
        elif isinstance(event, CallRetried):
            self._retries[event.step].append({
                "step": event.step, "attempt": event.attempt, "error": event.error,
                "delay": event.delay, "status": event.status, "t": event.t,
            })
        elif isinstance(event, CallFinished):
            self._finish_call(event)
        elif isinstance(event, RunFinished) and self._run and event.status != "planned":
            self._run.update(status=event.status, duration=event.duration)
            self.cassette = Cassette(
                run=dict(self._run), calls=self._calls.sealed(), tools=tuple(self._tools),
                swarmkit_version=__version__,
            )
            if self._on_finished is not None:
                self._on_finished(self.cassette)

    def _finish_call(self, event: CallFinished) -> None:
        record = event.call
        # The engine emits CallFinished right after the store returns, with no await in
        # between, so the oldest note for this step and request is this call's.
        key = (record.step, record.fingerprint)
        waiting = self._served.get(key)
        if not waiting:
            return
        served = waiting.pop(0)
        if not waiting:
            del self._served[key]  # else a large run keeps an empty list per call
        self._calls.append(RecordedCall(
            step=record.step,
            role=record.role,
            fingerprint=record.fingerprint,
            occurrence=served.occurrence,
            request=served.request.body(),
            response=None if served.response is None else served.response.to_dict(),
            source=served.source,
            started=record.started,
            latency=record.latency,
            attempts=record.attempts,
            cost_usd=record.cost_usd,
            error=record.error,
            error_type=served.error_type,
            status=record.status,
            retries=tuple(self._retries.pop(record.step, ())),
        ))
