"""The live views: an ipywidgets dashboard of one run, and one lane per run of a
comparison; each is fed as Sinks.

This module and ``display.reviewwidget`` (the plan's review) are the only ones that
import ipywidgets, and they do so inside the classes so that ``import swarmkit`` stays
light.

Both views share their coalescing flusher (``swarmkit.display.flusher``: the engine's
thread only appends events to an inbox; one daemon thread folds, renders and pushes the
changed sections at most ``max_rate`` times per second, ticking the clocks while calls
are in flight, and exits after the last run's final event), their Cancel and "Stop and
merge" buttons, and their close/discard lifecycle (``_LiveView``).

The worker table is one ``HTML`` widget whose value is replaced per push (at most
``live.MAX_ROWS`` rows plus a count by status), never one widget per worker; a
comparison is one ``HTML`` widget per lane (``swarmkit.display.lanes``), not one
dashboard per variant.
"""

from __future__ import annotations

from abc import abstractmethod
from collections import deque
from collections.abc import Callable, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..record.events import Event, RunFinished
from .flusher import TICK, Flusher
from .lanes import render_header, render_lane
from .livehtml import render_changed
from .livestate import SECTIONS, LiveState

if TYPE_CHECKING:
    from ..config.swarmconfig import SwarmConfig
    from ..record.events import Sink

__all__ = ["TICK", "CompareDashboard", "Dashboard", "close_widget_tree"]

_NO_CANCEL_TIP = "Cancel works for --background runs; interrupt the kernel to stop this one"
_NO_STOP_TIP = ("Stop and merge works for --background runs; "
                "interrupt the kernel to keep what finished")
Clock = Callable[[], "float | None"]


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


def close_widget_tree(root: Any) -> None:
    """Close ``root``'s model and every descendant's (with their layouts and styles)."""
    stack = [root]
    while stack:
        widget = stack.pop()
        stack.extend(getattr(widget, "children", ()))
        for part in (widget, getattr(widget, "layout", None), getattr(widget, "style", None)):
            if part is not None:
                part.close()


def _fold(state: LiveState, inbox: deque[Event]) -> bool:
    """Fold ``inbox`` into ``state``; True if the run's final event was among them."""
    finished = False
    apply = state.apply
    while inbox:
        event = inbox.popleft()
        apply(event)
        if isinstance(event, RunFinished):
            finished = True
    return finished


def _in_flight(state: LiveState) -> bool:
    return state.phase in ("planning", "reducing", "scoring") or bool(state.running)


def _tick(state: LiveState, now: float | None) -> None:
    """Move ``state``'s clock on to ``now`` and mark the sections that show it (after
    the fold: a finished run keeps the duration its last event gave, ``now`` None)."""
    if now is not None and now > state.now:
        state.now = now
        state.dirty.add("header")
        if state.running:
            state.dirty.add("workers")


class _LiveView(Flusher):
    """A flushed view with Cancel and "Stop and merge" buttons, closed once at the end."""

    def __init__(
        self, *, on_cancel: Callable[[], None] | None, on_stop: Callable[[], None] | None,
        clock: Clock | None, max_rate: float, what: str,
    ) -> None:
        super().__init__(max_rate=max_rate)
        import ipywidgets as widgets

        self._on_cancel = on_cancel
        self._on_stop = on_stop
        self._clock = clock
        self.cancel_button = widgets.Button(
            description="Cancel",
            button_style="danger",
            icon="stop",
            disabled=on_cancel is None,
            tooltip=f"Cancel this {what}" if on_cancel else _NO_CANCEL_TIP,
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

    def _box(self, header: Any, rest: Sequence[Any]) -> Any:
        """The view: ``header`` beside the buttons, then ``rest`` below."""
        import ipywidgets as widgets

        buttons = widgets.HBox([self.stop_button, self.cancel_button],
                               layout=widgets.Layout(flex="0 0 auto"))
        # In a narrow window the buttons wrap below the header rather than squeeze it
        # into a column one or two words wide.
        header.layout = widgets.Layout(flex="1 1 24em")
        top = widgets.HBox(
            [header, buttons],
            layout=widgets.Layout(justify_content="space-between", align_items="flex-start",
                                  flex_flow="row wrap"),
        )
        return _dashboard_box_class()([top, *rest])

    def _now(self) -> float | None:
        return None if self._clock is None or self._finished else self._clock()

    @abstractmethod
    def _mark_cancelling(self) -> None:
        """Under ``_lock``: show that a cancel was asked for."""

    def _done(self) -> None:
        self._disable_buttons()

    def _disable_buttons(self) -> None:
        self.cancel_button.disabled = True
        self.stop_button.disabled = True

    def _cancel_clicked(self, _button: Any = None) -> None:
        if self._on_cancel is None or self.cancel_button.disabled:
            return
        self._disable_buttons()
        self.cancel_button.description = "Cancelling…"
        with self._lock:
            self._mark_cancelling()
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
        """Push the final state, stop the flusher and disable the buttons."""
        if self._closed:
            return
        self._stop_flusher()
        self._disable_buttons()

    def discard(self) -> None:
        """Close the widgets' models once the static output has replaced the view, so a
        saved notebook keeps no widget state and the kernel no comms."""
        self.close()
        close_widget_tree(self.widget)

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Dashboard(_LiveView):
    """A Sink that shows a run live. Display ``.widget``; call ``.close()`` at the end."""

    def __init__(
        self,
        *,
        task: str,
        config: SwarmConfig,
        on_cancel: Callable[[], None] | None = None,
        on_stop: Callable[[], None] | None = None,
        clock: Clock | None = None,
        max_rate: float = 10.0,
    ) -> None:
        """``on_cancel`` / ``on_stop`` (stop fanning out and merge) enable the buttons;
        ``clock()`` is the run's time in seconds (None before it starts), read to tick
        the clocks between events."""
        super().__init__(on_cancel=on_cancel, on_stop=on_stop, clock=clock,
                         max_rate=max_rate, what="run")
        import ipywidgets as widgets

        self._state = LiveState(task=task, config=config)
        self._inbox: deque[Event] = deque()  # appended on the loop thread, drained here
        initial = render_changed(self._state)
        self.sections = {name: widgets.HTML(value=initial[name]) for name in SECTIONS}
        self.widget = self._box(self.sections["header"],
                                [self.sections[n] for n in SECTIONS if n != "header"])

    def on_event(self, event: Event) -> None:
        self._inbox.append(event)  # atomic; the flusher folds it into the state
        self._poke()

    def _render(self) -> dict[str, str]:
        if _fold(self._state, self._inbox):
            self._finished = True
        _tick(self._state, self._now())
        return render_changed(self._state)

    def _in_flight(self) -> bool:
        return self._clock is not None and not self._finished and _in_flight(self._state)

    def _mark_cancelling(self) -> None:
        self._state.cancelling = True
        self._state.dirty.add("header")

    def __enter__(self) -> Dashboard:
        return self


class _Lane:
    """The Sink of one run of a comparison: its events go to its own inbox, which the
    flusher folds."""

    __slots__ = ("inbox", "view")

    def __init__(self, view: CompareDashboard) -> None:
        self.inbox: deque[Event] = deque()
        self.view = view

    def on_event(self, event: Event) -> None:
        self.inbox.append(event)  # atomic; the flusher folds it into the lane's state
        self.view._poke()


class CompareDashboard(_LiveView):
    """The live view of a comparison: one compact lane per run, one set of buttons.

    Feed run ``i`` (variant ``i``, when none repeats) with ``.sink(i)``; display
    ``.widget``; ``.close()`` at the end. Every run's events arrive on the same engine
    loop thread.
    """

    def __init__(
        self,
        *,
        task: str,
        labels: Sequence[str],
        configs: Sequence[SwarmConfig],
        on_cancel: Callable[[], None] | None = None,
        on_stop: Callable[[], None] | None = None,
        clock: Clock | None = None,
        max_rate: float = 10.0,
        variants: int | None = None,
    ) -> None:
        """``clock()`` is the comparison's time in seconds (None before it starts). A lane
        is one run: ``variants`` says how many variants they are when some repeat (None:
        one lane per variant)."""
        if len(labels) != len(configs):
            raise ConfigError(f"a comparison needs one label per config: got {len(labels)} "
                              f"labels for {len(configs)} configs")
        super().__init__(on_cancel=on_cancel, on_stop=on_stop, clock=clock,
                         max_rate=max_rate, what="comparison")
        import ipywidgets as widgets

        self.task = task
        self.labels = list(labels)
        self.states = [LiveState(task=task, config=config) for config in configs]
        self._lanes = [_Lane(self) for _ in configs]
        self._ended = [False] * len(configs)
        self._cancelling = False
        self._variants = variants
        self.sections = {"header": widgets.HTML(
            value=render_header(task, self.states, variants=variants))}
        for i, (label, state) in enumerate(zip(self.labels, self.states, strict=True)):
            self.sections[f"lane-{i}"] = widgets.HTML(value=render_lane(label, state))
            state.dirty.clear()
        self.widget = self._box(self.sections["header"],
                                [self.sections[f"lane-{i}"] for i in range(len(configs))])

    def sink(self, i: int) -> Sink:
        """The Sink of run ``i``."""
        return self._lanes[i]

    def _render(self) -> dict[str, str]:
        now = self._now()
        rendered: dict[str, str] = {}
        for i, (lane, state) in enumerate(zip(self._lanes, self.states, strict=True)):
            if _fold(state, lane.inbox):
                self._ended[i] = True
            if not self._ended[i] and _in_flight(state):
                _tick(state, now)
            if state.dirty:
                rendered[f"lane-{i}"] = render_lane(self.labels[i], state)
                state.dirty.clear()
        self._finished = all(self._ended)
        if rendered or self._cancelling:
            rendered["header"] = render_header(self.task, self.states, self._cancelling,
                                               self._variants)
        return rendered

    def _in_flight(self) -> bool:
        return self._clock is not None and not self._finished and any(
            not ended and _in_flight(state)
            for ended, state in zip(self._ended, self.states, strict=True))

    def _mark_cancelling(self) -> None:
        self._cancelling = True
        for state in self.states:
            state.cancelling = True
            state.dirty.add("header")

    def __enter__(self) -> CompareDashboard:
        return self
