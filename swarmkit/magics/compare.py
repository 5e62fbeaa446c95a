"""``%%swarm --compare KEY=V1,V2``: the cell's task once per variant, side by side.

:func:`variants_for` turns the line's ``--compare`` flags into the variants and their
configs, refusing (one-line ``UsageError``) anything wrong before any call, and prints how
many variants will run. :class:`ComparisonHandle` is a :class:`SwarmHandle` whose result
is a :class:`~swarmkit.comparison.result.Comparison`: the cell runs, waits, is interrupted,
cancelled from its dashboard or with ``%swarm cancel`` / ``%swarm stop --merge``,
exactly as a single run is (``core`` drives both the same way), and every action
reaches every variant.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from ..api.result import Run
from ..comparison.result import Comparison
from ..comparison.runner import ComparisonRunner
from ..comparison.variants import Variant, check_count, parse_compare
from ..config.swarmconfig import SwarmConfig
from ..errors import ConfigError
from .bridge import SwarmHandle
from .flags import SwarmArgs
from .session import check_keys, usage_error

if TYPE_CHECKING:
    from ..record.events import Sink

__all__ = ["Compared", "ComparisonHandle", "variants_for"]

# Options create_engine takes apart from the config (a variant may still set them).
_ENGINE_ONLY = ("tools", "mcp_servers", "plan_from")
_NOTICE_LABELS = 4  # the notice names this many variants, then counts the rest


class Compared:
    """The variants of a ``--compare`` cell and each one's config, checked."""

    def __init__(self, variants: Sequence[Variant], configs: Sequence[SwarmConfig],
                 max_variants: int) -> None:
        self.variants = tuple(variants)
        self.configs = tuple(configs)
        self.max_variants = max_variants

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(variant.label for variant in self.variants)

    @property
    def lanes(self) -> tuple[tuple[str, SwarmConfig], ...]:
        """One (label, config) per run, in the runner's variant-major order: a variant
        that repeats has a lane per repeat, ``model=a · repeat 2 of 3``."""
        return tuple(
            (label if config.repeat == 1 else f"{label} · repeat {r + 1} of {config.repeat}",
             config.for_repeat(r))
            for label, config in zip(self.labels, self.configs, strict=True)
            for r in range(config.repeat))

    def notice(self) -> str:
        """``comparing 4 variants: model=a; model=b; ...`` (shown before anything runs)."""
        shown = "; ".join(self.labels[:_NOTICE_LABELS])
        more = len(self.labels) - _NOTICE_LABELS
        return (f"comparing {len(self.labels)} variants: {shown}"
                + (f"; and {more} more" if more > 0 else ""))


def variants_for(args: SwarmArgs, namespace: Mapping[str, Any], config: SwarmConfig,
                 env: Mapping[str, str]) -> Compared:
    """The checked variants of ``args.compare`` over ``config``; prints the count.

    Refused, each as one line: a bad KEY or value list, an ``@name`` not in the
    notebook, repeated values or keys, fewer than two variants, more than the cap, a
    variant whose options are invalid or whose model has no key, and a session that
    records or replays (set by ``%swarm config``; the flags are refused when parsed).
    """
    for name in ("record", "replay"):
        if getattr(config, name):
            raise UsageError(f"%%swarm: --compare cannot run with {name} set (by %swarm "
                             f"config); unset it with %swarm config {name}=")
    try:
        variants = parse_compare(args.compare, namespace)
        check_count(variants, args.max_variants)
        configs = [_config_of(config, variant, env) for variant in variants]
    except ConfigError as exc:
        raise usage_error(exc) from None
    for variant, variant_config in zip(variants, configs, strict=True):
        try:
            check_keys(variant_config, env)
        except UsageError as exc:
            raise UsageError(str(exc).replace("%%swarm: ", f"%%swarm: --compare variant "
                                              f"{variant.label}: ", 1)) from None
    compared = Compared(variants, configs, args.max_variants)
    print(compared.notice())
    return compared


def _config_of(config: SwarmConfig, variant: Variant, env: Mapping[str, str]) -> SwarmConfig:
    options = {k: v for k, v in variant.options if k not in _ENGINE_ONLY}
    try:
        return SwarmConfig.from_options(config, env=env, **options)
    except ConfigError as exc:
        raise ConfigError(f"--compare variant {variant.label}: {exc}") from None


class ComparisonHandle(SwarmHandle):
    """The variants of a ``--compare`` cell running on the background loop.

    As a :class:`SwarmHandle` (``--background`` returns one), but ``result()`` and
    ``run`` are a :class:`~swarmkit.comparison.result.Comparison` (partial while running), and
    ``start(views)`` takes live views that give variant ``i``'s sink by ``.sink(i)``.
    """

    def __init__(self, task: str, config: SwarmConfig, compared: Compared, *,
                 engine_options: Mapping[str, Any] | None = None) -> None:
        super().__init__(task, config, engine_options=engine_options)
        self.compared = compared
        self.runner: ComparisonRunner | None = None

    @property
    def labels(self) -> tuple[str, ...]:
        return self.compared.labels

    async def _drive(self, sinks: list[Sink]) -> Comparison:  # type: ignore[override]
        self._task = asyncio.current_task()
        views: list[Any] = list(sinks)
        runner = await ComparisonRunner.create(
            self.compared.variants, config=self.config,
            sinks_for=lambda i, _variant: [view.sink(i) for view in views],
            max_variants=self.compared.max_variants, **self.engine_options)
        # No await between here and execute(): a cancel on the loop sees either no
        # runner (then the task is cancelled while building) or this one.
        self.runner = runner
        if self._cancel_reason == "stopped":
            runner.stop()
        elif self._cancel_reason is not None:  # asked while the engines were built
            runner.cancel(self._cancel_reason)
        return await runner.execute(self.task)

    def _stop_on_loop(self) -> None:
        if self.runner is not None:
            self.runner.stop()
        elif self._task is not None and not self._task.done():
            self._task.cancel()

    def _cancel_on_loop(self, reason: str) -> None:
        if self.runner is not None:
            self.runner.cancel(reason)
        elif self._task is not None and not self._task.done():
            self._task.cancel()

    def now(self) -> float | None:
        """Seconds since the first variant started (the lanes' shared clock)."""
        return None if self.runner is None else max(e.now() for e in self.runner.engines)

    @property
    def state(self) -> str:
        """starting, planning, running, reducing, cancelling, stopping; once ended the
        variants' statuses (``completed``, or ``completed/failed`` when they differ)."""
        if self._ended():
            comparison = self.run
            return "ended" if comparison is None else "/".join(
                dict.fromkeys(run.status for run in comparison.runs))
        if self._cancel_reason is not None:
            return "stopping" if self._cancel_reason == "stopped" else "cancelling"
        if self.runner is None:
            return "starting"
        phases = {{"workers": "running"}.get(e.phase, e.phase) for e in self.runner.engines}
        return phases.pop() if len(phases) == 1 else "running"

    @property
    def run(self) -> Comparison | None:  # type: ignore[override]
        """The Comparison: final once done, of the partial Runs while running."""
        future = self.future
        if (future is not None and future.done() and not future.cancelled()
                and future.exception() is None):
            return future.result()  # type: ignore[return-value]
        runner = self.runner
        if runner is None:
            return None
        runs = [engine.run for engine in runner.engines]
        if any(run is None for run in runs):
            return None
        return runner.comparison_of(self.task, [Run.of(run) for run in runs if run is not None])

    def __repr__(self) -> str:
        state = self.state
        count = f"{len(self.compared.variants)} variants"
        if not self._ended():
            tip = "" if self.cancelled else (
                "; %swarm cancel stops it, %swarm stop --merge merges what finished")
            return f"<ComparisonHandle {count} {state}{tip}; the Comparison goes to _swarm>"
        if self.run is None:
            return f"<ComparisonHandle {count} ended without a result: {self.exception()!r}>"
        return f"<ComparisonHandle {count} {state}; the Comparison is in _swarm>"
