"""``CallStore``: the RunCaller every run goes through — cache, recording, replay.

Modes compose: the cache and the cassette recorder can both be on (cache hits are
recorded too, so the cassette replays the whole run). Replay excludes everything else:
it has no provider at all, so it cannot reach the network.

Each request gets an occurrence index (the n-th identical request within the run), so
two identical calls in one run are cached and replayed as two entries.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..config.swarmconfig import RoleConfig, SwarmConfig
from ..credentials.secrets import find_secret, secret_values
from ..engine.modelcaller import ModelCaller
from ..errors import (
    CassetteError,
    ProviderError,
    ResponseFormatUnsupported,
    StoreError,
    SwarmError,
)
from ..record.events import CallRetried, Event, Sink
from ..record.modelcall import (
    CallOutcome,
    CallSource,
    ChatRequest,
    ChatResponse,
    ToolKey,
    ToolOutcome,
    endpoint_key,
)
from .cache import ResponseCache
from .cassette import Cassette, RecordedCall
from .cassettebuilder import CassetteBuilder
from .history import History, HistorySink
from .recent import remember_recording
from .replay import Player

__all__ = ["CallStore"]

log = logging.getLogger("swarmkit")


class CallStore:
    """Serves model calls from the cache, a cassette or the provider, and records them.

    Build it with :meth:`from_config`; give the engine its :attr:`sinks` and
    :meth:`engine_options`. ``aclose`` raises any error that stopped the cassette file
    from being written (a refused key leak, an unwritable path).
    """

    def __init__(
        self,
        provider: ModelCaller | None = None,
        *,
        cache: ResponseCache | None = None,
        recorder: CassetteBuilder | None = None,
        player: Player | None = None,
        refresh: Iterable[str] = (),
        secrets: Mapping[str, str] | None = None,
        read_cache: bool = True,
    ) -> None:
        if player is not None and (provider is not None or cache is not None):
            raise StoreError("replay serves only from the cassette; drop the cache/provider")
        self.provider = provider
        self.cache = cache
        self.read_cache = read_cache  # False: answers are written to the cache, not served
        self.recorder = recorder
        self.player = player
        self.refresh = frozenset(refresh)
        self.secrets = dict(secrets or {})
        self.sinks: list[Sink] = [recorder] if recorder is not None else []
        self.error: SwarmError | None = None
        # Why the run has no history although its config asked for one (from_config).
        self.history_off: StoreError | None = None
        self._history: History | None = None
        self._seen: Counter[str] = Counter()
        self._tools_seen: Counter[tuple[str, int, str, str]] = Counter()
        self._clock: Callable[[], float] | None = None
        self._carried: Player | None = None  # the answers of the calls a run carries

    @classmethod
    def from_config(
        cls,
        config: SwarmConfig,
        *,
        env: Mapping[str, str],
        provider_factory: Callable[[], ModelCaller] | None = None,
        cassette: Cassette | None = None,
    ) -> CallStore:
        """The store ``config`` asks for: replay, or cache/record/history over a provider.

        ``provider_factory`` is called last (after the database opened), and never in
        replay, so replay constructs no client at all.
        """
        if config.replay:
            player = Player(cassette or Cassette.load(config.replay))
            remember_recording(player.cassette)
            return cls(player=player)
        secrets = secret_values(config, env)
        history, history_off = None, None
        if config.history or config.cache:
            try:
                history = History(config.history_file())
            except StoreError as exc:
                # History is a record, never a reason to fail a run (a damaged or
                # unreadable file): the run goes ahead without it, and says so once.
                log.warning("swarmkit: the history is off for this run: %s", exc)
                config = replace(config, history=False, cache=False)
                history_off = exc
        try:
            store = cls(
                None,
                # Every answer is written as it lands, cache on or off, so a run that
                # dies can be resumed (resume=); only the cache reads them back.
                cache=ResponseCache(history.db) if history is not None else None,
                read_cache=config.cache,
                refresh=config.refresh,
                secrets=secrets,
            )
            store._history = history
            store.history_off = history_off
            # Always recorded (in memory), so any finished run can be exported afterwards.
            store.recorder = CassetteBuilder(
                lambda cassette: store._keep(cassette, config.record, keep=config.history)
            )
            store.sinks.append(store.recorder)
            if history is not None and config.history:
                store.sinks.append(HistorySink(history, secrets))
            if provider_factory is not None:
                store.provider = provider_factory()
        except BaseException:
            # No store to hand back, so nobody else could close the database.
            if history is not None:
                history.close()
            raise
        return store

    @property
    def replaying(self) -> bool:
        return self.player is not None

    def recorded(self, request: ChatRequest) -> bool | None:
        """In replay, whether the cassette holds ``request``; None when not replaying."""
        return None if self.player is None else self.player.recorded(request)

    def carry(self, calls: Sequence[RecordedCall]) -> None:
        """Answer these calls, made before the run (a Plan's planner calls, as its
        store recorded them), as they were answered: with their recorded response or
        failure, source, start, latency, attempts, retries and cost, never asking the
        provider or the cache again. Each is noted for the run's cassette like a call
        made now. The engine asks them first (``Engine(carried=...)``:
        :meth:`engine_options` gives them)."""
        if self.player is not None:
            raise StoreError("replay carries the calls its cassette holds; carry none")
        self._carried = Player(Cassette(run={}, calls=tuple(calls), source="the plan"))

    def engine_options(self) -> dict[str, Any]:
        """Engine arguments: the carried calls (:meth:`carry`); in replay, the recorded
        run id, date, duration, review and carried calls (the cassette's planner calls
        of a run of given tasks: a Plan's run)."""
        if self.player is None:
            if self._carried is None:
                return {}
            return {"carried": tuple(c.carried() for c in self._carried.cassette.calls)}
        cassette = self.player.cassette
        return {"run_id": cassette.run_id, "started_at": cassette.started_at,
                "recorded_duration": cassette.duration, "review": cassette.review,
                "carried": cassette.carried_calls()}

    # -- model calls -------------------------------------------------------------------------

    async def complete(
        self,
        request: ChatRequest,
        *,
        role: RoleConfig,
        run_id: str,
        step: str,
        emit: Callable[[Event], None],
        clock: Callable[[], float],
        on_delta: Callable[[str], None] | None = None,
    ) -> CallOutcome:
        self._clock = clock
        fingerprint = request.fingerprint()
        occurrence = self._seen[fingerprint]
        self._seen[fingerprint] += 1
        if self.player is not None:
            return self._replay(self.player, request, step, occurrence, emit, on_delta)
        if self._carried is not None and self._carried.holds(request, occurrence):
            return self._replay(self._carried, request, step, occurrence, emit, on_delta,
                                carried=True)
        started = clock()
        cache_key = endpoint_key(fingerprint, role)
        if self.cache is not None and self.read_cache and step not in self.refresh:
            cached = self._cache_get(cache_key, occurrence)
            if cached is not None:
                if on_delta is not None and cached.content:
                    on_delta(cached.content)
                self._served(step, request, occurrence, cached, "cache")
                return CallOutcome(cached, "cache", 0, clock() - started, occurrence)
        if self.provider is None:
            raise StoreError(f"no provider to serve {step}; build the CallStore with one")
        try:
            outcome = await self.provider.complete(
                request, role=role, run_id=run_id, step=step, emit=emit, clock=clock,
                on_delta=on_delta,
            )
        except ProviderError as exc:  # failures are recorded, never cached
            self._served(step, request, occurrence, None, "live", type(exc).__name__)
            raise
        self._cache_put(cache_key, occurrence, request.model, outcome.response)
        self._served(step, request, occurrence, outcome.response, outcome.source)
        return replace(outcome, occurrence=occurrence)

    def _replay(
        self,
        player: Player,
        request: ChatRequest,
        step: str,
        occurrence: int,
        emit: Callable[[Event], None],
        on_delta: Callable[[str], None] | None,
        *,
        carried: bool = False,
    ) -> CallOutcome:
        """A recorded call served again: from the replayed cassette, or ``carried`` (a
        call made before the run, noted for its cassette, its source kept as it was)."""
        entry: RecordedCall = player.call(request, step=step, occurrence=occurrence)
        for retry in entry.retries:
            emit(CallRetried(**retry))
        if carried:
            self._served(step, request, occurrence, entry.chat_response()
                         if entry.response is not None else None, entry.source,
                         entry.error_type)
        if entry.response is None:
            error = (ResponseFormatUnsupported if entry.error_type == "ResponseFormatUnsupported"
                     else ProviderError)
            raise error(entry.error or "recorded failure", status=entry.status,
                        attempts=entry.attempts, started=entry.started, latency=entry.latency)
        response = entry.chat_response()
        if on_delta is not None and response.content:
            on_delta(response.content)
        # A call the recording served from its cache shows as cached again: the replay
        # must render what the recording rendered.
        source: CallSource = ("cache" if entry.source == "cache" else
                              entry.source if carried else "replay")
        return CallOutcome(
            response, source, entry.attempts, entry.latency, occurrence,
            started=entry.started, cost_usd=entry.cost_usd, cost_recorded=True,
        )

    @property
    def serves_cache(self) -> bool:
        """Whether :meth:`complete` reads the cache (then so does a cluster run)."""
        return self.cache is not None and self.read_cache and self.player is None

    def would_hit(self, step: str, request: ChatRequest, role: RoleConfig,
                  ahead: Counter[str]) -> bool:
        """Whether :meth:`complete` would serve ``request`` from the cache, made next
        after those counted in ``ahead`` (which counts it too); counts nothing here."""
        fingerprint = request.fingerprint()
        occurrence = self._seen[fingerprint] + ahead[fingerprint]
        ahead[fingerprint] += 1
        if not self.serves_cache or step in self.refresh:
            return False
        return self._cache_get(endpoint_key(fingerprint, role), occurrence) is not None

    def cached_elsewhere(self, step: str, request: ChatRequest, role: RoleConfig, *,
                         look: bool = True) -> tuple[int, ChatResponse | None]:
        """A call a shard of a cluster run is about to make, counted here: its
        occurrence, and its cached answer (noted for the cassette, as :meth:`complete`
        notes a hit) or None (not ``look``ed for; the shard calls, then
        :meth:`served_elsewhere`)."""
        fingerprint = request.fingerprint()
        occurrence = self._seen[fingerprint]
        self._seen[fingerprint] += 1
        if not look or not self.serves_cache or step in self.refresh:
            return occurrence, None
        cached = self._cache_get(endpoint_key(fingerprint, role), occurrence)
        if cached is not None:
            self._served(step, request, occurrence, cached, "cache")
        return occurrence, cached

    def served_elsewhere(self, step: str, request: ChatRequest, role: RoleConfig,
                         response: ChatResponse | None, source: CallSource,
                         error_type: str | None = None, occurrence: int | None = None
                         ) -> int:
        """A call a shard served: counted (unless :meth:`cached_elsewhere` counted it:
        its ``occurrence``), written to the cache and noted for the cassette here, as
        :meth:`complete` does its own, so a sharded run leaves one cache and cassette."""
        fingerprint = request.fingerprint()
        if occurrence is None:
            occurrence = self._seen[fingerprint]
            self._seen[fingerprint] += 1
        if response is not None:
            self._cache_put(endpoint_key(fingerprint, role), occurrence, request.model,
                            response)
        self._served(step, request, occurrence, response, source, error_type)
        return occurrence

    def tool_elsewhere(self, key: ToolKey, outcome: ToolOutcome) -> None:
        """A tool call a shard ran, kept for the cassette as :meth:`tool` keeps its own."""
        ident = (key.step, key.hop, key.name, key.arguments)
        occurrence = self._tools_seen[ident]
        self._tools_seen[ident] += 1
        if self.recorder is not None:
            self.recorder.tool(key, occurrence, outcome)

    def _served(self, step: str, request: ChatRequest, occurrence: int,
                response: ChatResponse | None, source: CallSource,
                error_type: str | None = None) -> None:
        if self.recorder is not None:
            self.recorder.served(step, request, occurrence, response, source, error_type)

    def _cache_get(self, fingerprint: str, occurrence: int) -> ChatResponse | None:
        assert self.cache is not None
        try:
            return self.cache.get(fingerprint, occurrence)
        except StoreError as exc:
            self._cache_failed(exc)
        except (ValueError, KeyError, TypeError):  # an unreadable row is just a miss
            pass
        return None

    def _cache_put(self, fingerprint: str, occurrence: int, model: str,
                   response: ChatResponse) -> None:
        if self.cache is None:
            return
        try:
            self.cache.put_later(fingerprint, occurrence, model, response, self._cache_failed,
                                 refuse=self._echoes_a_key)
        except StoreError as exc:
            self._cache_failed(exc)

    def _echoes_a_key(self, response: ChatResponse) -> bool:
        """A response echoing a key is never written to disk (checked on the writer)."""
        return find_secret(response.content or "", self.secrets) is not None

    def _cache_failed(self, exc: StoreError) -> None:
        # A broken cache costs money, not correctness: warn once and call live from now on.
        log.warning("swarmkit: cache off for this run: %s", exc)
        self.cache = None

    # -- tool calls --------------------------------------------------------------------------

    async def tool(
        self, key: ToolKey, execute: Callable[[], Awaitable[ToolOutcome]]
    ) -> ToolOutcome:
        ident = (key.step, key.hop, key.name, key.arguments)
        occurrence = self._tools_seen[ident]
        self._tools_seen[ident] += 1
        if self.player is not None:
            found = self.player.tool(key, occurrence)
            return ToolOutcome(found.result, found.error, found.duration, "replay",
                               found.started)
        # Tools have side effects: they are never cached, always executed.
        started = self._clock() if self._clock is not None else None
        outcome = await execute()
        if self.recorder is not None:
            if outcome.started is None and started is not None:
                outcome = replace(outcome, started=started)
            self.recorder.tool(key, occurrence, outcome)
        return outcome

    # -- the end of the run ------------------------------------------------------------------

    def _keep(self, cassette: Cassette, path: str | None, *, keep: bool) -> None:
        history = self._history if keep else None
        # A large one is read back from the history it goes to, not kept in memory too.
        remember_recording(cassette, None if history is None else history.path)
        if path:
            try:
                cassette.save(path, self.secrets)
            except CassetteError as exc:
                self.error = exc  # raised by aclose: the user asked for this file
                log.warning("swarmkit: %s", exc)
        if history is not None:
            try:
                history.save_cassette_later(cassette, self.secrets)
            except StoreError as exc:
                log.warning("swarmkit: history not saved: %s", exc)

    async def aclose(self) -> None:
        try:
            if self.provider is not None:
                await self.provider.aclose()
        finally:
            if self._history is not None:
                self._history.close()
        if self.error is not None:
            error, self.error = self.error, None
            raise error
