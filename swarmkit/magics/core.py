"""``SwarmMagics``: the ``%%swarm`` cell magic and the ``%swarm`` line magic.

The cell magic parses its line (``flags``), interpolates the cell (``interpolate``),
merges options over the session defaults (defaults < env < ``%swarm config`` < flags),
runs the swarm on the background loop (``bridge``) and ends with exactly one display of
the run's static bundle. The line magic dispatches to the subcommands in ``commands``.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.display import display

from ..api.entry import create_engine
from ..config.swarmconfig import SwarmConfig
from ..config.template import interpolate
from ..display import widget
from ..engine.background import background_loop
from ..errors import ConfigError, SwarmError
from ..store.cassette import Cassette
from ..store.replayconfig import with_recorded_requests
from ..store.writethread import writes_deferred
from .bridge import SwarmHandle, summary_line
from .commands import COMMANDS, commands_help, split_args
from .compare import Compared, ComparisonHandle, variants_for
from .dryrun import dry_run, dry_run_variants
from .flags import NOTEBOOK_DEFAULTS, SwarmArgs, build_parser, name_the_flag, parse_line
from .interrupts import InterruptGate
from .liveswitch import live_instead_of_replay
from .output import publish, publish_widget, run_bundle
from .reviewcell import Review, holds_for_review, plan_handle, plan_in_cell
from .session import LAST_HANDLE, LAST_RUN, check_keys, usage_error
from .tools import with_session_tools

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from ..api.result import Run
    from ..comparison.result import Comparison
    from ..record.events import Sink

__all__ = ["SwarmMagics", "load_ipython_extension"]

log = logging.getLogger("swarmkit")

@magics_class
class SwarmMagics(Magics):
    """Holds the session: defaults set by ``%swarm config``, the last run, background runs."""

    def __init__(self, shell: InteractiveShell | None = None) -> None:
        super().__init__(shell)
        self.session_options: dict[str, Any] = {}
        self.last_run: Run | Comparison | None = None
        # Background runs and the variables their Run goes to when they end.
        self.background: dict[SwarmHandle, tuple[str, ...]] = {}
        self.pending_review: Review | None = None  # the last review shown (--review)

    @property
    def namespace(self) -> dict[str, Any]:
        assert self.shell is not None
        return self.shell.user_ns  # type: ignore[no-any-return]

    def session_config(self, *, recording: Cassette | None = None,
                       **options: Any) -> SwarmConfig:
        """Defaults < ``SWARMKIT_*`` env < ``%swarm config`` < ``recording``'s
        request-shaping options (a replay cell's cassette) < ``options``."""
        try:
            base = SwarmConfig.from_env(os.environ, NOTEBOOK_DEFAULTS)
            base = base.with_options(**self.session_options)
            if recording is not None:
                base = with_recorded_requests(recording, base)
        except SwarmError as exc:
            raise usage_error(exc) from None
        try:
            return base.with_options(**options)
        except ConfigError as exc:  # one of this cell's flags: name it as it was typed
            raise UsageError(f"%%swarm: {name_the_flag(str(exc), options)}") from None

    def store(self, run: Run | Comparison | None, names: Sequence[str]) -> None:
        if run is None:
            return
        for name in names:
            self.namespace[name] = run
        self.last_run = run

    # -- the magic ---------------------------------------------------------------------

    @line_cell_magic
    def swarm(self, line: str, cell: str | None = None) -> Any:
        if cell is None:
            return self._line(line)
        return self._cell(line, cell)

    def _line(self, line: str) -> Any:
        argv = split_args(line, "%swarm")
        if not argv:
            print(commands_help())
            return None
        command = COMMANDS.get(argv[0])
        if command is None:
            raise UsageError(
                f"%swarm: unknown command {argv[0]!r}; use one of {', '.join(COMMANDS)} "
                "(a swarm run is the cell magic %%swarm)"
            )
        return command.load()(self, argv[1:])

    def _cell(self, line: str, cell: str) -> Any:
        args = parse_line(line, self.namespace)
        if args.help:
            print(magic_help())
            return None
        task = (interpolate(cell, self.namespace) if args.interpolate else cell).strip()
        if not task:
            raise UsageError("%%swarm: the cell is empty; write the task below the %%swarm line")
        if not args.compare and args.config_options.get("repeat") not in (None, 1):
            # A session's repeat (%swarm config repeat=K) is for its --compare cells.
            raise UsageError("%%swarm: --repeat runs each variant of a --compare K times; "
                             "add --compare KEY=V1,V2, or drop --repeat for one run")
        config = self.session_config(**args.config_options)
        if config.replay is not None:
            # A replay cell asks what its recording asked, whatever this session's
            # defaults; the cell's own flags still win (store.replayconfig).
            config = self.session_config(recording=_cassette(config.replay),
                                         **args.config_options)
        engine_options = with_session_tools(args.engine_options, self.session_options)
        # SWARMKIT_LIVE: a replay cell may run live instead (it prints which it does).
        config = live_instead_of_replay(
            config, os.environ, (t.name for t in engine_options.get("tools") or ()))
        if config.replay is None:
            check_keys(config, os.environ)
        # --compare: the variants are checked and counted before anything runs.
        compared = (variants_for(args, self.namespace, config, os.environ)
                    if args.compare else None)
        if args.dry_run:
            return self._dry_run(task, config, args, compared)
        names = (LAST_RUN, *([args.out] if args.out else []))
        # Replay shows one final display and nothing else, so its outputs compare equal.
        live = not args.quiet and config.replay is None and self._can_show_dashboard()
        if holds_for_review(args, config, engine_options):
            handle = self._review(task, config, args, engine_options, names, live)
            if handle is None:  # the review is on screen (or was interrupted): done
                return None
        else:
            handle = (SwarmHandle(task, config, engine_options=engine_options)
                      if compared is None else
                      ComparisonHandle(task, config, compared, engine_options=engine_options))
        # A replay takes a moment and must leave one final display (nbval compares it),
        # so it always runs in the foreground, even with --background.
        if args.background and config.replay is None:
            return self.run_in_output(handle, names, uuid.uuid4().hex, live, update=False)
        # Saving the finished run to history waits until its tables are shown.
        with writes_deferred():
            return self._foreground(task, handle.config, handle, names, live)

    def run_in_cell(self, task: str, config: SwarmConfig, names: Sequence[str]) -> None:
        """A swarm with no cell of its own (``%swarm resume``), shown as a cell's is."""
        handle = SwarmHandle(task, config)
        with writes_deferred():
            self._foreground(task, config, handle, tuple(names), self._can_show_dashboard())

    def _foreground(
        self, task: str, config: SwarmConfig, handle: SwarmHandle, names: tuple[str, ...],
        live: bool,
    ) -> None:
        """Run in the cell. The live dashboard and the final tables share one display:
        when the run ends, however it ends, the tables replace the dashboard in place
        and its widgets are closed, so the cell (and the saved notebook) holds one
        output and no widget view that a fresh kernel could not show."""
        display_id = uuid.uuid4().hex
        # An interrupt lands only in the wait: anywhere else (showing the dashboard,
        # starting the run, putting the tables in its place) it would leave a frozen
        # dashboard or a run nobody waits for (see InterruptGate).
        with InterruptGate() as gate:
            dashboard = (self._attach_dashboard(task, config, handle, display_id)
                         if live else None)
            handle.start([] if dashboard is None else [dashboard])
            try:
                with gate.waiting():
                    run = handle.result()
            except KeyboardInterrupt:
                run = handle.cancel_and_collect("interrupt")
                self.store(run, names)
                self._show_final(run, dashboard, display_id)
                print(summary_line(run, "interrupt", names))
                return None
            except Exception as exc:
                if dashboard is not None:  # no frozen view above the error
                    self._show_final(handle.run, dashboard, display_id)
                self._raise_run_error(exc)
            self.store(run, names)
            self._show_final(run, dashboard, display_id)
        return None

    def _show_final(self, run: Run | Comparison | None, dashboard: Any, display_id: str
                    ) -> None:
        """Put the run's static bundle where the dashboard was (or show it, if none
        was shown); a run that ended before it had a Run leaves a one-line note."""
        if dashboard is None:
            if run is not None:
                publish(run_bundle(run))
            return
        dashboard.close()  # the last push, so nothing updates the view after this
        if run is not None:
            publish(run_bundle(run), display_id, update=True)
        else:
            publish(({"text/plain": "swarm ended before it started; nothing to show"}, {}),
                    display_id, update=True)
        dashboard.discard()

    def _raise_run_error(self, exc: Exception) -> None:
        if isinstance(exc, SwarmError):
            raise usage_error(exc) from None
        raise exc

    def _can_show_dashboard(self) -> bool:
        # Widgets need a frontend: a terminal IPython gets only the final tables.
        return getattr(self.shell, "kernel", None) is not None

    def _dashboard(
        self, task: str, config: SwarmConfig, handle: SwarmHandle, *, background: bool
    ) -> Any:
        # A blocked cell cannot receive clicks, so only a background run gets live buttons.
        on_cancel = (lambda: handle.cancel("cancelled")) if background else None
        on_stop = (lambda: handle.stop(merge=True)) if background else None
        # Looked up on the module at each call, so a test can stand in for the class.
        if isinstance(handle, ComparisonHandle):  # one compact lane per run
            lanes = handle.compared.lanes  # one per run: each repeat has its own
            return widget.CompareDashboard(
                task=task, labels=[label for label, _ in lanes],
                configs=[config for _, config in lanes],
                variants=len(handle.compared.variants), on_cancel=on_cancel,
                on_stop=on_stop, clock=handle.now)
        return widget.Dashboard(task=task, config=config, on_cancel=on_cancel,
                                on_stop=on_stop, clock=handle.now)

    def _attach_dashboard(
        self, task: str, config: SwarmConfig, handle: SwarmHandle, display_id: str,
    ) -> Any:
        """The live view of the swarm about to start; without one (it failed) the run
        goes on."""
        try:
            dashboard = self._dashboard(task, config, handle, background=False)
        except Exception as exc:  # the run matters more than its live view
            print(f"swarmkit: no live dashboard ({type(exc).__name__}: {exc}); "
                  "the tables appear when the run ends")
            return None
        handle.dashboard = dashboard
        publish_widget(dashboard.widget, display_id)
        return dashboard

    def _review(self, task: str, config: SwarmConfig, args: SwarmArgs,
                engine_options: dict[str, Any], names: tuple[str, ...], live: bool
                ) -> SwarmHandle | None:
        """Ask the planner only. ``--review``, or a forecast over ``confirm_over``: show
        the review and return None (the kernel is free; its Run button starts the run).
        Under ``confirm_over``: the handle that runs the plan as it is (its planner's
        calls carried, no second one), with no review recorded (nobody looked at it)."""
        try:
            made = plan_in_cell(task, config, engine_options)
        except Exception as exc:
            self._raise_run_error(exc)
        if made is None:
            return None
        options = {"task": task, "config": config, "engine_options": engine_options,
                   "names": names, "live": live}
        review = (Review(self, made=made, **options) if args.review else
                  Review.held(self, made, config.confirm_over, **options))
        if review is None:  # as Plan.run(approved_by=None) runs it
            try:
                return plan_handle(task, made.run_options(None))
            except SwarmError as exc:
                raise usage_error(exc) from None
        review.show()
        return None

    def run_in_output(self, handle: SwarmHandle, names: tuple[str, ...], display_id: str,
                      live: bool, *, update: bool = True) -> SwarmHandle:
        """Start ``handle`` in the background, its dashboard (or a line) shown in the
        output ``display_id`` (``update``: in place of what it shows, a review)."""
        dashboard = (self._dashboard(handle.task, handle.config, handle, background=True)
                     if live else None)
        handle.dashboard = dashboard
        return self._background(handle, [] if dashboard is None else [dashboard], names,
                                dashboard, display_id, update)

    def _background(
        self, handle: SwarmHandle, sinks: list[Sink], names: tuple[str, ...], dashboard: Any,
        display_id: str, update: bool,
    ) -> SwarmHandle:
        if dashboard is not None:
            publish_widget(dashboard.widget, display_id, update=update)
        else:
            publish(({"text/plain": "swarm running in the background; "
                      "its tables replace this line when it ends"}, {}), display_id,
                    update=update)
        handle.start(sinks)
        self.background = {h: n for h, n in self.background.items() if not h.done()}
        self.background[handle] = names
        self.namespace[LAST_HANDLE] = handle

        def finished(done: SwarmHandle) -> None:
            try:
                if dashboard is not None:
                    dashboard.close()
                run = done.run
                self.store(run, names)
                if run is not None:
                    publish(run_bundle(run), display_id, update=True)
                else:
                    text = f"swarm ended without a run: {done.exception()!r}"
                    publish(({"text/plain": text}, {}), display_id, update=True)
                if dashboard is not None:
                    dashboard.discard()
            except Exception:  # on the loop thread: nowhere to raise to
                log.exception("swarmkit could not publish a background run")

        handle.add_done_callback(finished)
        return handle

    def _dry_run(self, task: str, config: SwarmConfig, args: SwarmArgs,
                 compared: Compared | None) -> None:
        async def plan() -> Any:
            if compared is not None:
                return await dry_run_variants(task, config, compared.variants,
                                              args.engine_options)
            engine = await create_engine(config=config, **args.engine_options)
            return await dry_run(engine, task)

        bridge = background_loop()
        future = bridge.submit(plan())
        try:
            result = bridge.wait(future)
        except KeyboardInterrupt:
            future.cancel()
            print("dry run interrupted; nothing to keep")
            return None
        except Exception as exc:
            self._raise_run_error(exc)
        # Like a run's, the result is in _swarm (and --out): --plan-from takes it.
        for name in (LAST_RUN, *([args.out] if args.out else [])):
            self.namespace[name] = result
        display(result)
        return None


def _cassette(path: str) -> Cassette:
    try:
        return Cassette.load(path)
    except SwarmError as exc:
        raise usage_error(exc) from None


def magic_help() -> str:
    return "\n".join([
        "Run the cell as a planner → workers → reducer swarm; the cell body is the task.",
        "",
        "    %%swarm --model gpt-4.1-mini --workers 8 --budget 0.50 --out run",
        "    Compare five vector databases for a team of {team_size}.",
        "",
        "{name} takes a value from the notebook, {{ and }} give literal braces, and any",
        "other braces (a JSON example) stay as written. The Run lands in _swarm (and in",
        "--out NAME); Ctrl-C / interrupt keeps what finished.",
        "",
        "    %%swarm --compare worker_model=gpt-4.1-mini,gpt-4.1 --compare system=@brief,@long",
        "",
        "runs the task once per variant (here a 2 × 2 grid), concurrently under one budget;",
        "identical calls are made once. _swarm holds the Comparison.",
        "",
        "%env SWARMKIT_LIVE=1 makes --replay cells run live instead, when every model they",
        "name can run here (a hosted one needs its key); %env SWARMKIT_LIVE=0 replays again.",
        "",
        build_parser().format_help().rstrip(),
        "",
        commands_help(),
    ])


SwarmMagics.swarm.__doc__ = magic_help()


def load_ipython_extension(ipython: InteractiveShell) -> None:
    """Register ``SwarmMagics``: IPython calls this the first time ``%%swarm`` or
    ``%swarm`` is used after ``%load_ext swarmkit`` declared them (``extension``)."""
    ipython.register_magics(SwarmMagics)
