"""The live dashboard: an ipywidgets view of a running swarm, fed as a Sink.

This is the only module that imports ipywidgets, and it does so inside ``Dashboard``
so that ``import swarmkit`` stays light.

Coalescing. ``on_event`` runs on the engine's loop thread; it only appends the event to
an inbox and, on the first event since the last push, wakes the flusher. The flusher
folds the inbox into plain Python state (``LiveState``, O(1) an event) just before it
renders, so the engine's thread pays a list append per event, not the fold and a lock.
The flusher is one daemon thread that pushes the changed sections' HTML into the
widgets at most ``max_rate`` times per second, and not at all when nothing changed.
A thread rather than ``loop.call_later`` on the engine loop because:
rendering and widget comm traffic then never run on the engine's loop (the engine never
waits on the display); trait changes from a background thread reach the frontend at
once even while the cell blocks; and ``close()`` can flush from any thread without
needing the engine loop to still be running. The flusher exits by itself after the
run's final event, so a dashboard nobody closes leaves no thread behind.

Ticking. While calls are in flight the flusher also wakes once per ``TICK`` seconds
without an event, reads the run's clock and pushes the header clock and the running
workers' elapsed times, so a slow call never looks like a hung run. It never ticks once
the run is idle or finished, and a tick is one more push within ``max_rate``.

The worker table is one ``HTML`` widget whose value is replaced per push (at most
``live.MAX_ROWS`` rows plus a count by status), never one widget per worker.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..events import Event, RunFinished
from .livehtml import render_changed
from .livestate import SECTIONS, LiveState

if TYPE_CHECKING:
    from ..config.swarm import SwarmConfig

__all__ = ["Dashboard"]

_JOIN_TIMEOUT = 2.0
# Seconds between clock ticks while calls are in flight (the issue asks for >= 1/s).
TICK = 0.5
_NO_CANCEL_TIP = "Cancel works for --background runs; interrupt the kernel to stop this one"
_NO_STOP_TIP = ("Stop and merge works for --background runs; "
                "interrupt the kernel to keep what finished")


@cache
def _dashboard_box_class() -> type:
    """A VBox whose text/plain is one stable line, not its children's HTML.

    That line is what a terminal, or a notebook saved without widget state (nbval),
    shows for the dashboard.
    """
    import ipywidgets as widgets

    class DashboardBox(widgets.VBox):  # type: ignore[misc]
        def __repr__(self) -> str:
            return "<swarmkit dashboard: the live view needs a Jupyter widget frontend>"

    return DashboardBox


class Dashboard:
    """A Sink that shows a run live. Display ``.widget``; call ``.close()`` at the end."""

    def __init__(
        self,
        *,
        task: str,
        config: SwarmConfig,
        on_cancel: Callable[[], None] | None = None,
        on_stop: Callable[[], None] | None = None,
        clock: Callable[[], float | None] | None = None,
        max_rate: float = 10.0,
    ) -> None:
        """``on_cancel`` / ``on_stop`` (stop fanning out and merge) enable the buttons;
        ``clock()`` is the run's time in seconds (None before it starts), read to tick
        the clocks between events."""
        if not max_rate > 0:
            raise ConfigError(f"max_rate must be a positive number of updates/s, got {max_rate}")
        import ipywidgets as widgets

        self._state = LiveState(task=task, config=config)
        self._interval = 1.0 / max_rate
        self._on_cancel = on_cancel
        self._on_stop = on_stop
        self._clock = clock
        self._lock = threading.Lock()  # guards _state
        self._inbox: deque[Event] = deque()  # appended on the loop thread, drained here
        self._flush_lock = threading.Lock()  # one push at a time, flusher or close()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._pending = False
        self._finished = False
        self._closed = False
        self._thread: threading.Thread | None = None
        self._last_push = float("-inf")
        self.updates_sent = 0
        initial = render_changed(self._state)
        self.sections: dict[str, Any] = {
            name: widgets.HTML(value=initial[name]) for name in SECTIONS
        }
        self.cancel_button = widgets.Button(
            description="Cancel",
            button_style="danger",
            icon="stop",
            disabled=on_cancel is None,
            tooltip="Cancel this run" if on_cancel else _NO_CANCEL_TIP,
            layout=widgets.Layout(width="auto", flex="0 0 auto"),
        )
        self.cancel_button.on_click(self._cancel_clicked)
        self.stop_button = widgets.Button(
            description="Stop and merge",
            button_style="warning",
            icon="compress",
            disabled=on_stop is None,
            tooltip=("Stop starting workers, cancel the running ones, and merge the "
                     "finished ones" if on_stop else _NO_STOP_TIP),
            layout=widgets.Layout(width="auto", flex="0 0 auto"),
        )
        self.stop_button.on_click(self._stop_clicked)
        buttons = widgets.HBox([self.stop_button, self.cancel_button],
                               layout=widgets.Layout(flex="0 0 auto"))
        # In a narrow window the buttons wrap below the header rather than squeeze it
        # into a column one or two words wide.
        self.sections["header"].layout = widgets.Layout(flex="1 1 24em")
        header = widgets.HBox(
            [self.sections["header"], buttons],
            layout=widgets.Layout(justify_content="space-between", align_items="flex-start",
                                  flex_flow="row wrap"),
        )
        self.widget = _dashboard_box_class()(
            [header, *(self.sections[name] for name in SECTIONS if name != "header")]
        )

    # -- the Sink ----------------------------------------------------------------------

    def on_event(self, event: Event) -> None:
        self._inbox.append(event)  # atomic; the flusher folds it into the state
        if not self._pending:  # a race here costs at most one extra, empty push
            self._pending = True
            if self._thread is None and not self._closed:
                self._start_flusher()
            self._wake.set()

    def _drain(self) -> None:
        """Fold the events that arrived since the last push into the state (under _lock)."""
        inbox, apply = self._inbox, self._state.apply
        while inbox:
            event = inbox.popleft()
            apply(event)
            if isinstance(event, RunFinished):
                self._finished = True

    # -- pushing to the widgets ----------------------------------------------------------

    @property
    def flushing(self) -> bool:
        """Whether the flusher thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def flush(self) -> bool:
        """Push every changed section now, clocks ticked; True if any widget changed."""
        with self._flush_lock:
            with self._lock:
                self._pending = False
                self._drain()
                self._tick()
                rendered = render_changed(self._state)
            pushed = False
            for name, value in rendered.items():
                section = self.sections[name]
                if section.value != value:
                    section.value = value
                    pushed = True
            if pushed:
                self.updates_sent += 1
                self._last_push = time.monotonic()
            return pushed

    def _start_flusher(self) -> None:
        self._thread = threading.Thread(
            target=self._flush_loop, name="swarmkit-dashboard-flusher", daemon=True
        )
        self._thread.start()

    def _in_flight(self) -> bool:
        """Whether a clock on screen is running: the run started and has not ended."""
        state = self._state
        return self._clock is not None and not self._finished and (
            state.phase in ("planning", "reducing") or bool(state.running))

    def _tick(self) -> None:
        """Move the run's clock on to now and mark the sections that show it (under
        _lock, after the drain: a finished run keeps the duration its last event gave)."""
        now = None if self._clock is None or self._finished else self._clock()
        state = self._state
        if now is not None and now > state.now:
            state.now = now
            state.dirty.add("header")
            if state.running:
                state.dirty.add("workers")

    def _flush_loop(self) -> None:
        while True:
            self._wake.wait(TICK if self._in_flight() else None)
            if self._stop.is_set():
                return
            delay = self._last_push + self._interval - time.monotonic()
            if delay > 0 and self._stop.wait(delay):
                return  # close() makes the final push
            self._wake.clear()  # before flush(): a change made during it wakes us again
            self.flush()
            done = self._finished and not self._pending
            if done:
                self._disable_buttons()
                return

    # -- cancel and close --------------------------------------------------------------

    def _disable_buttons(self) -> None:
        self.cancel_button.disabled = True
        self.stop_button.disabled = True

    def _cancel_clicked(self, _button: Any = None) -> None:
        if self._on_cancel is None or self.cancel_button.disabled:
            return
        self._disable_buttons()
        self.cancel_button.description = "Cancelling…"
        with self._lock:
            self._state.cancelling = True
            self._state.dirty.add("header")
        self._on_cancel()
        self.flush()

    def _stop_clicked(self, _button: Any = None) -> None:
        if self._on_stop is None or self.stop_button.disabled:
            return
        self._disable_buttons()
        self.stop_button.description = "Stopping, merging…"
        self._on_stop()
        self.flush()

    def close(self) -> None:
        """Push the final state, stop the flusher and disable the Cancel button."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(_JOIN_TIMEOUT)
        self.flush()
        self._disable_buttons()

    def discard(self) -> None:
        """Close the widgets' models once the static output has replaced the view, so a
        saved notebook keeps no widget state and the kernel no comms."""
        self.close()
        stack = [self.widget]
        while stack:
            widget = stack.pop()
            stack.extend(getattr(widget, "children", ()))
            for part in (widget, getattr(widget, "layout", None), getattr(widget, "style", None)):
                if part is not None:
                    part.close()

    def __enter__(self) -> Dashboard:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
