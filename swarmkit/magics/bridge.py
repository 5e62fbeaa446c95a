"""The bridge from a cell to the background event loop: one swarm, one handle.

The engine runs on swarmkit's loop thread (``swarmkit.engine.background``); the cell's thread only
waits, in short slices, so a kernel interrupt lands. Cancelling always happens on the
loop thread (``Engine.cancel`` must), and what finished before it is kept.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from IPython.display import display, update_display

from ..api.entry import create_engine
from ..comparison.result import Comparison
from ..engine.background import WAIT_SLICE, background_loop

if TYPE_CHECKING:
    import concurrent.futures

    from ..api.result import Run
    from ..config.swarmconfig import SwarmConfig
    from ..engine.engine import Engine
    from ..record.events import Sink

__all__ = ["CANCEL_GRACE", "SwarmHandle", "summary_line"]

# How long a cancelled run may take to hand back its partial Run before we stop waiting.
CANCEL_GRACE = 2.0


class SwarmHandle:
    """A swarm running on the background loop. ``--background`` returns one.

    ``cancel()`` stops it from any thread; ``result()`` waits for the Run;
    ``run`` is the Run so far (partial while running).
    """

    def __init__(
        self,
        task: str,
        config: SwarmConfig,
        *,
        engine_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.task = task
        self.config = config
        self.engine_options = dict(engine_options or {})
        self.engine: Engine | None = None
        self.dashboard: Any = None  # the live view, when the magic shows one
        self.future: concurrent.futures.Future[Run] | None = None
        self._bridge = background_loop()
        self._task: asyncio.Task[Any] | None = None
        self._cancel_reason: str | None = None
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[SwarmHandle], None]] | None = []
        # Set once the done-callbacks ran, so result() returns with _swarm already stored.
        self._settled = threading.Event()
        self._display_id: str | None = None  # of the repr shown by _ipython_display_

    def start(self, sinks: Sequence[Sink] = ()) -> SwarmHandle:
        self.future = self._bridge.submit(self._drive(list(sinks)))
        self.future.add_done_callback(self._settle)
        return self

    def _settle(self, _future: concurrent.futures.Future[Run]) -> None:
        try:
            with self._lock:
                callbacks, self._callbacks = self._callbacks or [], None
            for callback in callbacks:
                callback(self)
        finally:
            self._settled.set()

    async def _drive(self, sinks: list[Sink]) -> Run:
        self._task = asyncio.current_task()
        engine = await create_engine(config=self.config, sinks=sinks, **self.engine_options)
        try:
            if self._cancel_reason is not None:  # cancelled while the engine was being built
                raise asyncio.CancelledError
            # No await between here and execute()'s first line, so a cancel scheduled on
            # the loop sees either no engine (handled above) or a running one.
            self.engine = engine
            return await engine.execute(self.task)
        finally:
            await engine.caller.aclose()

    # -- control -----------------------------------------------------------------------

    def cancel(self, reason: str = "cancelled") -> None:
        """Stop the run (thread-safe); finished workers are kept."""
        with self._lock:
            if self._cancel_reason is None:
                self._cancel_reason = reason
        self._bridge.call_soon(self._cancel_on_loop, reason)

    def stop(self, merge: bool = False) -> None:
        """Stop the run (thread-safe). ``merge=True``: stop fanning out, cancel the
        pending and running workers, and let the reducer merge the ones that finished
        (the Run ends ``stopped``, with an answer). ``merge=False`` is ``cancel()``."""
        if not merge:
            self.cancel("cancelled")
            return
        with self._lock:
            if self._cancel_reason is None:
                self._cancel_reason = "stopped"
        self._bridge.call_soon(self._stop_on_loop)

    def _stop_on_loop(self) -> None:
        if self.engine is not None:
            self.engine.stop()
        elif self._task is not None and not self._task.done():
            self._task.cancel()  # still building the engine: nothing to merge yet

    def _cancel_on_loop(self, reason: str) -> None:
        if self.engine is not None:
            self.engine.cancel(reason)
        elif self._task is not None and not self._task.done():
            self._task.cancel()  # still building the engine: nothing to keep yet

    def now(self) -> float | None:
        """Seconds since the run started (the live view's clock); None before."""
        engine = self.engine
        return None if engine is None else engine.now()

    def _ended(self) -> bool:
        """The run's future has its outcome (its done-callbacks may still be running)."""
        return self.future is not None and self.future.done()

    def done(self) -> bool:
        """The run ended and its done-callbacks (storing _swarm, the display) ran."""
        return self._settled.is_set()

    @property
    def cancelled(self) -> bool:
        """A cancel or a stop was asked for (the run may still be winding down)."""
        return self._cancel_reason is not None

    @property
    def state(self) -> str:
        """One word for where the run is: starting, planning, running, reducing,
        cancelling, stopping, or once ended the Run's status."""
        if self._ended():
            run = self.run
            return "ended" if run is None else run.status
        if self._cancel_reason is not None:
            return "stopping" if self._cancel_reason == "stopped" else "cancelling"
        engine = self.engine
        if engine is None:
            return "starting"
        return {"workers": "running"}.get(engine.phase, engine.phase)

    @property
    def run(self) -> Run | None:
        """The Run: final once done, the partial one while running."""
        future = self.future
        if (
            future is not None and future.done() and not future.cancelled()
            and future.exception() is None
        ):
            return future.result()
        return None if self.engine is None else self.engine.run

    def result(self) -> Run:
        """Block until the run ends; KeyboardInterrupt passes through to the caller."""
        assert self.future is not None, "start() the handle first"
        run = self._bridge.wait(self.future)
        while not self._settled.wait(WAIT_SLICE):  # callbacks run right after the result
            pass
        return run

    def cancel_and_collect(self, reason: str, grace: float = CANCEL_GRACE) -> Run | None:
        """Cancel, then wait up to ``grace`` seconds for the partial Run.

        Further interrupts during the grace period are swallowed: the user already asked
        to stop, and a second Ctrl-C must not leave the kernel with a traceback.
        """
        self.cancel(reason)
        deadline = time.monotonic() + grace
        while self.future is not None and not self.future.done():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                self.future.result(timeout=min(WAIT_SLICE, remaining))
            except KeyboardInterrupt:
                continue
            except BaseException:  # the outcome is read below, from the future or engine
                break
        if self.future is not None and self.future.done():
            self._settled.wait(max(0.0, deadline - time.monotonic()))
        return self.run

    def add_done_callback(self, callback: Callable[[SwarmHandle], None]) -> None:
        """Call ``callback(handle)`` when the run ends (at once if it has ended)."""
        with self._lock:
            if self._callbacks is not None:
                self._callbacks.append(callback)
                return
        callback(self)

    def exception(self) -> BaseException | None:
        if self.future is None or not self.future.done() or self.future.cancelled():
            return None
        return self.future.exception()

    # -- display -----------------------------------------------------------------------

    def __repr__(self) -> str:
        # Read the state first: a run that ends between the two reads then shows a final
        # status with its run id, never "running" for a finished run.
        state = self.state
        run = self.run
        run_id = run.run_id if run is not None else "(no run id yet)"
        if not self._ended():
            tip = "" if self.cancelled else (
                "; %swarm cancel stops it, %swarm stop --merge merges what finished")
            return f"<SwarmHandle {run_id} {state}{tip}; the Run goes to _swarm>"
        if run is None:
            return f"<SwarmHandle {run_id} ended without a run: {self.exception()!r}>"
        return f"<SwarmHandle {run_id} {state}; the Run is in _swarm>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))

    def _ipython_display_(self) -> None:
        """Show the repr in a display that is rewritten when the run ends, so the line a
        ``--background`` cell leaves says how the run ended, not "starting"."""
        first = self._display_id is None
        if first:
            self._display_id = uuid.uuid4().hex
        display({"text/plain": repr(self)}, raw=True, display_id=self._display_id)
        if first:
            self.add_done_callback(lambda handle: update_display(
                {"text/plain": repr(handle)}, raw=True, display_id=handle._display_id))


def summary_line(run: Run | Comparison | None, how: str, names: Sequence[str]) -> str:
    """``swarm cancelled (interrupt): 12 of 50 workers finished; partial run in _swarm``.

    The word after "swarm" is the Run's status, so the notice and ``run.status`` agree;
    ``how`` says what ended it when that is not the status itself.
    """
    where = " and ".join(names)
    if run is None:
        return f"swarm {how} before it started; nothing to keep"
    if isinstance(run, Comparison):
        return _comparison_line(run, how, where)
    word = run.status if how == run.status else f"{run.status} ({how})"
    if not run.plan:
        return f"swarm {word} while planning; partial run in {where}"
    finished = sum(1 for worker in run.workers if worker.status == "completed")
    if run.status == "stopped":
        merged = "merged" if run.answer is not None else "finished; nothing merged"
        return (f"swarm {word}: {finished} of {len(run.plan)} workers {merged}; "
                f"the run is in {where}")
    return f"swarm {word}: {finished} of {len(run.plan)} workers finished; partial run in {where}"


def _comparison_line(comparison: Comparison, how: str, where: str) -> str:
    """``comparison cancelled (interrupt): workers finished 2 of 4 · 3 of 4; partial
    comparison in _swarm``: one figure per variant, in the variants' order."""
    statuses = list(dict.fromkeys(run.status for run in comparison.runs))
    status = "/".join(statuses)
    word = status if how == status else f"{status} ({how})"
    figures = " · ".join(
        "planning" if not run.plan else
        f"{sum(1 for w in run.workers if w.status == 'completed')} of {len(run.plan)}"
        for run in comparison.runs)
    kept = "the comparison" if statuses == ["stopped"] else "partial comparison"
    return (f"comparison {word}: {len(comparison)} variants, workers finished {figures}; "
            f"{kept} in {where}")
