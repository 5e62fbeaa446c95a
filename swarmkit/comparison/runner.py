"""Running a comparison: one engine per variant, concurrently, under one budget.

``swarmkit.compare(task, variants=[{...}, {...}], **common)`` (and ``compare_sync``) build
a :class:`ComparisonRunner` and return its :class:`~swarmkit.comparison.result.Comparison`. The
``%%swarm --compare`` magic uses the runner directly, to give each variant its dashboard
lane and to cancel or stop every variant at once.

Every variant's provider goes through one :class:`~swarmkit.provider.sharedcalls.SharedCalls`,
so a request two variants both send is made once; every variant reserves from one
:class:`~swarmkit.engine.budget.Budget`, so the budget caps the comparison, not each variant.

``repeat=K`` runs each variant K times: one engine per (variant, repeat), repeat ``r``
built from ``config.for_repeat(r)``, so each repeat sends its own seed (repeat 0 is the
variant's config itself). The seed is in the request, so the repeats are distinct calls
(never shared with each other), and a re-run of the comparison asks the same requests,
which the cache serves. The engines are in variant-major order, and so are the live
sinks: ``sinks_for(i, variant)`` is asked for run ``i`` (variant 0's repeats, then
variant 1's), so each repeat has a dashboard lane of its own.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..api.entry import create_engine
from ..api.result import Run
from ..config.options import TOOL_CHOICE_KEYS
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

# Sinks for run i (its dashboard lane, say): its index in variant-major order (the
# variant's index when no variant repeats) and its Variant.
SinksFor = Callable[[int, Variant], Sequence[Sink]]

# What create_engine takes apart from the config (the tool loop, the checks, a stored plan
# or run, the tracer); every other option is applied to the variant's config, before the
# repeat's seed, so a given seed= is offset per repeat rather than overriding it.
_ENGINE_KEYS = frozenset({"tools", "mcp_servers", "plan_from", "checks", "resume",
                          "tracer_provider", *TOOL_CHOICE_KEYS})


class ComparisonRunner:
    """The engines of a comparison. Build with :meth:`create`; ``execute`` once."""

    def __init__(self, variants: Sequence[Variant], engines: Sequence[Engine],
                 shared: SharedCalls, repeats: Sequence[int] | None = None) -> None:
        self.variants = tuple(variants)
        self.engines = tuple(engines)
        self.shared = shared
        # How many engines (repeats) each variant has; the engines are variant-major.
        self.repeats = (1,) * len(self.variants) if repeats is None else tuple(repeats)
        if len(self.repeats) != len(self.variants) or sum(self.repeats) != len(self.engines):
            raise ConfigError(f"a comparison runner needs one repeat count per variant "
                              f"summing to its {len(self.engines)} engines; got "
                              f"{list(self.repeats)}")

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
        replay = common.pop("replay", None)
        env = os.environ if env is None else env
        engine_options = {k: common.pop(k) for k in list(common) if k in _ENGINE_KEYS}
        base = SwarmConfig.from_options(config, env=env, **common)
        configs = [_config_of(config, env, variant, common) for variant in found]
        replays = _one_per_run(replay, [c.repeat for c in configs])
        budget = Budget(base.budget_usd, base.budget_tokens)
        shared = SharedCalls()
        engines: list[Engine] = []
        try:
            for variant, variant_config in zip(found, configs, strict=True):
                own = {k: v for k, v in variant.options if k in _ENGINE_KEYS}
                for repeat in range(variant_config.repeat):
                    sinks = sinks_for(len(engines), variant) if sinks_for is not None else ()
                    try:
                        engine = await create_engine(
                            config=variant_config.for_repeat(repeat), sinks=sinks, env=env,
                            shared_budget=budget, shared=shared, replay=replays[len(engines)],
                            **{**engine_options, **own})
                    except ConfigError as exc:
                        raise ConfigError(f"variant {variant.label}: {exc}") from None
                    engines.append(engine)
        except BaseException:
            for engine in engines:
                await engine.caller.aclose()
            raise
        return cls(found, engines, shared, [c.repeat for c in configs])

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
        comparison = self.comparison_of(
            task, [Run.of(run) for run in outcomes])  # type: ignore[arg-type]
        if closing:
            error = closing[0]
            error.comparison = comparison  # type: ignore[attr-defined]
            raise error
        return comparison

    def comparison_of(self, task: str, runs: Sequence[Run]) -> Comparison:
        """The Comparison of ``runs``, one per engine in the engines' order: grouped by
        variant into its repeats, repeat 0 of each variant its ``runs``."""
        if len(runs) != len(self.engines):
            raise ConfigError(f"a comparison of {len(self.engines)} engines needs as many "
                              f"runs; got {len(runs)}")
        grouped: list[tuple[Run, ...]] = []
        for count in self.repeats:
            start = sum(len(group) for group in grouped)
            grouped.append(tuple(runs[start:start + count]))
        return Comparison(task, self.variants, tuple(group[0] for group in grouped),
                          shared_calls=self.shared.served, repeats=tuple(grouped))

    def cancel(self, reason: str = "cancelled") -> None:
        """Cancel every variant (call on the engines' loop thread)."""
        for engine in self.engines:
            engine.cancel(reason)

    def stop(self) -> None:
        """Stop fanning out in every variant and merge what finished."""
        for engine in self.engines:
            engine.stop()


def _config_of(config: SwarmConfig | None, env: Mapping[str, str], variant: Variant,
               common: Mapping[str, Any]) -> SwarmConfig:
    """The variant's config: ``common``, then the variant's own options over it."""
    options = {**common, **{k: v for k, v in variant.options if k not in _ENGINE_KEYS}}
    try:
        return SwarmConfig.from_options(config, env=env, **options)
    except ConfigError as exc:
        raise ConfigError(f"variant {variant.label}: {exc}") from None


def _one_per_run(replay: Any, repeats: Sequence[int]) -> list[Any]:
    """``replay=``: one cassette per run, in the variants' order and each variant's
    repeats in turn (an exported comparison replays this way), or none."""
    count = sum(repeats)
    if replay is None:
        return [None] * count
    if isinstance(replay, (str, os.PathLike)) or len(replay) != count:
        per = "variant" if count == len(repeats) else "variant and repeat"
        raise ConfigError(f"replay= takes one cassette per {per} ({count}), in the "
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
    ``repeat=K`` runs each variant K times, each repeat with its own seed
    (``Comparison.repeats``; ``Comparison.scores()`` has every repeat's scores).
    ``replay=[cassette, ...]`` (one per variant, and per repeat) replays a recorded
    comparison offline. ``confirm_over=`` is refused: a comparison holds no one plan to
    review (``swarmkit.plan`` makes each variant's).
    """
    if common.get("confirm_over") is not None or (config is not None
                                                    and config.confirm_over is not None):
        raise ConfigError("compare: confirm_over holds one run's plan for review, and a "
                          "comparison has one per variant; review them with swarmkit.plan "
                          "(with each variant's options), or drop confirm_over")
    runner = await ComparisonRunner.create(variants, config=config, env=env,
                                           max_variants=max_variants, **common)
    return await runner.execute(task)


def compare_sync(task: str, **options: Any) -> Comparison:
    """``compare`` for synchronous code, including inside a running loop (a notebook)."""
    return run_blocking(lambda: compare(task, **options))
