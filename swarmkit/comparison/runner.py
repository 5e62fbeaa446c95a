"""Running a comparison: one engine per variant, concurrently, under one budget.

``swarmkit.compare(task, variants=[{...}, {...}], **common)`` (and ``compare_sync``) build
a :class:`ComparisonRunner` and return its :class:`~swarmkit.comparison.result.Comparison`. The
``%%swarm --compare`` magic uses the runner directly, to give each variant its dashboard
lane and to cancel or stop every variant at once.

Every variant's provider goes through one :class:`~swarmkit.provider.sharedcalls.SharedCalls`,
so a request two variants both send is made once; every variant reserves from one
:class:`~swarmkit.engine.budget.Budget`, so the budget caps the comparison, not each variant.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..api.entry import create_engine
from ..api.result import Run
from ..config.swarmconfig import SwarmConfig
from ..engine.background import run_blocking
from ..engine.budget import Budget
from ..engine.engine import Engine
from ..errors import ConfigError, SwarmError
from ..provider.sharedcalls import SharedCalls
from ..record.events import Sink
from .result import Comparison
from .variants import MAX_VARIANTS, Variant, check_count, variants_of

__all__ = ["ComparisonRunner", "compare", "compare_sync"]

# Sinks for variant i (its dashboard lane, say), given its index and Variant.
SinksFor = Callable[[int, Variant], Sequence[Sink]]


class ComparisonRunner:
    """The engines of a comparison. Build with :meth:`create`; ``execute`` once."""

    def __init__(self, variants: Sequence[Variant], engines: Sequence[Engine],
                 shared: SharedCalls) -> None:
        self.variants = tuple(variants)
        self.engines = tuple(engines)
        self.shared = shared

    @classmethod
    async def create(
        cls,
        variants: Sequence[Variant] | Sequence[Mapping[str, Any]],
        *,
        config: SwarmConfig | None = None,
        sinks_for: SinksFor | None = None,
        env: Mapping[str, str] | None = None,
        max_variants: int = MAX_VARIANTS,
        **common: Any,
    ) -> ComparisonRunner:
        """One engine per variant: ``common`` options, then the variant's over them.

        Refuses more than ``max_variants`` variants before any engine is built.
        """
        found = (tuple(variants) if all(isinstance(v, Variant) for v in variants)
                 else variants_of(variants))  # type: ignore[arg-type]
        check_count(found, max_variants)
        replays = _one_per_variant(common.pop("replay", None), len(found))
        env = os.environ if env is None else env
        base = SwarmConfig.from_options(config, env=env, **{
            k: v for k, v in common.items()
            if k not in ("tools", "mcp_servers", "plan_from", "checks")})
        budget = Budget(base.budget_usd, base.budget_tokens)
        shared = SharedCalls()
        engines: list[Engine] = []
        try:
            for index, variant in enumerate(found):
                sinks = sinks_for(index, variant) if sinks_for is not None else ()
                try:
                    engine = await create_engine(
                        config=config, sinks=sinks, env=env, shared_budget=budget,
                        shared=shared, replay=replays[index], **{**common, **variant.as_dict()})
                except ConfigError as exc:
                    raise ConfigError(f"variant {variant.label}: {exc}") from None
                engines.append(engine)
        except BaseException:
            for engine in engines:
                await engine.caller.aclose()
            raise
        return cls(found, engines, shared)

    async def execute(self, task: str) -> Comparison:
        """Run every variant to its end; each keeps what finished, as a single run does."""
        outcomes = await asyncio.gather(
            *(engine.execute(task) for engine in self.engines), return_exceptions=True)
        closing: list[BaseException] = []
        for engine in self.engines:
            try:
                await engine.caller.aclose()
            except SwarmError as exc:
                closing.append(exc)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        comparison = Comparison(task, self.variants,
                                tuple(Run.of(run) for run in outcomes),  # type: ignore[arg-type]
                                shared_calls=self.shared.served)
        if closing:
            error = closing[0]
            error.comparison = comparison  # type: ignore[attr-defined]
            raise error
        return comparison

    def cancel(self, reason: str = "cancelled") -> None:
        """Cancel every variant (call on the engines' loop thread)."""
        for engine in self.engines:
            engine.cancel(reason)

    def stop(self) -> None:
        """Stop fanning out in every variant and merge what finished."""
        for engine in self.engines:
            engine.stop()


def _one_per_variant(replay: Any, count: int) -> list[Any]:
    """``replay=``: one cassette per variant, in the variants' order (an exported
    comparison replays this way), or none."""
    if replay is None:
        return [None] * count
    if isinstance(replay, (str, os.PathLike)) or len(replay) != count:
        raise ConfigError(f"replay= takes one cassette per variant ({count}), in the "
                          "variants' order")
    return list(replay)


async def compare(
    task: str,
    *,
    variants: Sequence[Mapping[str, Any]],
    config: SwarmConfig | None = None,
    env: Mapping[str, str] | None = None,
    max_variants: int = MAX_VARIANTS,
    **common: Any,
) -> Comparison:
    """Run ``task`` once per variant, concurrently, and return them side by side.

    ``variants`` is a list of option dicts (``[{"model": "a"}, {"model": "b"}]``) applied
    over ``common`` (any option of ``swarmkit.run``). The variants share one budget
    (``budget=``) and identical calls are made once. At most ``max_variants`` variants.
    ``replay=[cassette, ...]`` (one per variant) replays a recorded comparison offline.
    """
    runner = await ComparisonRunner.create(variants, config=config, env=env,
                                           max_variants=max_variants, **common)
    return await runner.execute(task)


def compare_sync(task: str, **options: Any) -> Comparison:
    """``compare`` for synchronous code, including inside a running loop (a notebook)."""
    return run_blocking(lambda: compare(task, **options))
