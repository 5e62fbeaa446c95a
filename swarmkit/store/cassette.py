"""Cassettes: a run's model calls and tool results as versioned JSON, for exact replay.

A cassette holds, per call, the request body (never headers or keys), the response, and
the figures the tables showed (start, latency, attempts, cost), so that replaying it
renders byte-identical output. It is plain JSON: never pickle, and nothing in it runs.

    {"swarmkit_cassette": 1, "swarmkit_version": "0.1.0",
     "run": {"run_id", "started_at", "task", "config", "status", "duration"},
     "calls": [{"step", "role", "fingerprint", "occurrence", "request", "response", ...}],
     "tools": [{"step", "hop", "name", "arguments", "occurrence", "result", ...}]}
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any, NotRequired, cast

from pydantic import ValidationError
from typing_extensions import TypedDict

from ..config.swarmconfig import AUTO_MODEL, LOCAL_MODEL, ROLES, Role, SwarmConfig
from ..credentials.secrets import find_secret
from ..errors import CassetteError
from ..record.carried import CarriedCall
from ..record.fileshapes import (
    Cost,
    Count,
    JSONObject,
    RecordedConfig,
    Schema,
    Seconds,
    describe,
    parse_json,
    shaped_like,
)
from ..record.jsontext import Items, json_pieces, plain
from ..record.modelcall import CallSource, ChatRequest, ChatResponse
from ..record.review import ApprovedBy, PlanReview

__all__ = ["CASSETTE_FORMAT", "Cassette", "RecordedCall", "RecordedTool"]

CASSETTE_FORMAT = 1


# -- the declared shape of a cassette file ------------------------------------------------


class _Usage(TypedDict, total=False):
    prompt_tokens: Count | None
    completion_tokens: Count | None
    cached_tokens: Count | None
    reasoning_tokens: Count | None
    requests: Count


class _ToolCall(TypedDict):
    id: str
    name: str
    arguments: str


class RecordedResponse(TypedDict, total=False):
    """What ``ChatResponse.to_dict`` writes and ``ChatResponse.from_dict`` reads."""

    content: str | None
    usage: _Usage | None
    tool_calls: list[_ToolCall] | None
    finish_reason: str | None
    model: str | None


class RecordedRetry(TypedDict):
    """A CallRetried event as recorded; replay emits it as it is."""

    step: str
    attempt: Count
    error: str
    delay: Seconds
    status: Count | None
    t: Seconds


class RecordedReview(TypedDict):
    """``PlanReview.to_dict``: a reviewed run's plan as proposed and as approved."""

    proposed: list[str]
    approved: list[str]
    edited: Count
    dropped: Count
    added: Count
    approved_by: ApprovedBy


class RecordedRun(TypedDict):
    run_id: str
    started_at: str
    task: str
    duration: Seconds
    status: NotRequired[str]
    config: NotRequired[RecordedConfig]
    review: NotRequired[RecordedReview]  # a reviewed run only; its config holds the tasks


@dataclass(frozen=True, slots=True)
class RecordedCall:
    """One model call as recorded: what was asked, what came back, what the tables showed."""

    step: str
    role: str
    fingerprint: str
    occurrence: Count
    request: JSONObject
    # None when the call failed; kept as recorded, checked against RecordedResponse.
    response: Annotated[dict[str, Any] | None, shaped_like(RecordedResponse)]
    source: CallSource  # how the recording run was served: live or cache
    started: Seconds
    latency: Seconds
    attempts: Count
    cost_usd: Cost
    error: str | None = None
    error_type: str | None = None  # ProviderError or ResponseFormatUnsupported
    status: Count | None = None
    retries: tuple[RecordedRetry, ...] = ()

    def chat_response(self) -> ChatResponse:
        return ChatResponse.from_dict(self.response or {})

    def carried(self) -> CarriedCall:
        """This call as one a later run carries (``Engine(carried=...)``): its request,
        rebuilt from the recorded body (the same fingerprint)."""
        return CarriedCall(cast(Role, self.role), self.step, ChatRequest.from_dict(self.request))

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "role": self.role,
            "fingerprint": self.fingerprint,
            "occurrence": self.occurrence,
            "request": self.request,
            "response": self.response,
            "source": self.source,
            "started": self.started,
            "latency": self.latency,
            "attempts": self.attempts,
            "cost_usd": None if self.cost_usd is None else str(self.cost_usd),
            "error": self.error,
            "error_type": self.error_type,
            "status": self.status,
            "retries": list(self.retries),
        }


@dataclass(frozen=True, slots=True)
class RecordedTool:
    """One tool execution as recorded; replay returns it instead of running the tool."""

    step: str
    hop: Count
    name: str
    arguments: str
    occurrence: Count
    result: str | None
    error: str | None
    duration: Seconds
    started: Seconds | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "hop": self.hop,
            "name": self.name,
            "arguments": self.arguments,
            "occurrence": self.occurrence,
            "result": self.result,
            "error": self.error,
            "duration": self.duration,
            "started": self.started,
        }


class _File(TypedDict):
    run: Annotated[dict[str, Any], shaped_like(RecordedRun)]
    calls: list[RecordedCall]
    tools: NotRequired[list[RecordedTool] | None]


_FILE: Schema[_File] = Schema(_File)


@dataclass(frozen=True)
class Cassette:
    """A recorded run. Build one with :meth:`load` / :meth:`loads` or by recording."""

    run: dict[str, Any]
    # A tuple when read from a file; a recording run's are a store.packedcalls
    # RecordedCalls (kept compressed), equal to the tuple of the same calls.
    calls: Sequence[RecordedCall] = ()
    tools: tuple[RecordedTool, ...] = ()
    swarmkit_version: str = ""
    source: str = field(default="<memory>", compare=False)  # where it came from, for messages

    @property
    def run_id(self) -> str:
        return str(self.run["run_id"])

    @property
    def started_at(self) -> str:
        return str(self.run["started_at"])

    @property
    def duration(self) -> float:
        return float(self.run["duration"])

    @property
    def task(self) -> str:
        return str(self.run["task"])

    def carried_calls(self) -> tuple[CarriedCall, ...]:
        """The planner's calls a run of given tasks carries (a Plan's run): in replay
        they are asked again, in order, and served from here. None for a run whose
        planner ran in it, or that had none (given tasks, ``plan_from``)."""
        recorded = self.run.get("config") or {}
        if not recorded.get("tasks"):
            return ()
        return tuple(call.carried() for call in self.calls if call.role == "planner")

    @property
    def review(self) -> PlanReview | None:
        """How the recorded run's plan was reviewed; a replay states it again and asks
        nothing (the approved sub-tasks are the recorded config's ``tasks``)."""
        data = self.run.get("review")
        if not isinstance(data, dict):
            return None
        return PlanReview(tuple(data["proposed"]), tuple(data["approved"]), data["edited"],
                          data["dropped"], data["added"], data["approved_by"])

    def resolve_config(self, config: SwarmConfig) -> SwarmConfig:
        """Pin ``auto``/``local`` roles to the recorded models, so replay starts no server;
        given tasks, a skipped reducer, the reducer's input limit and the judge (its model
        and rubric) come from the recording (no namespace needed, a tree reduction asks for
        the parts it recorded, and the judge's calls are asked again)."""
        recorded = self.run.get("config") or {}
        if not config.tasks and recorded.get("tasks"):
            config = replace(config, tasks=tuple(recorded["tasks"]))
        limit = recorded.get("reducer_max_input_tokens")
        if config.reducer_max_input_tokens is None and isinstance(limit, int):
            config = replace(config, reducer_max_input_tokens=limit)
        if recorded.get("reduce") is False:
            config = replace(config, reduce=False)
        auto_local = recorded.get("auto_local")
        if not config.auto_local and isinstance(auto_local, list) and auto_local:
            # The recording's "auto fell back to the embedded model" line shows in replay.
            config = replace(config, auto_local=tuple(str(role) for role in auto_local))
        judge = recorded.get("judge")
        if config.judge is None and isinstance(judge, dict) and isinstance(judge.get("model"),
                                                                             str):
            # The recording's judge scores the replay too, its calls served from the file.
            rubric = recorded.get("rubric")
            config = replace(config, judge=judge["model"],
                             rubric=rubric if isinstance(rubric, str) else config.rubric)
        roles = {}
        for role in ROLES:
            current = config.role(role)
            model = (recorded.get(role) or {}).get("model")
            if current.model in (AUTO_MODEL, LOCAL_MODEL) and isinstance(model, str):
                roles[role] = replace(current, model=model)
        return replace(config, **roles) if roles else config

    # -- JSON ----------------------------------------------------------------------------

    def shape(self) -> dict[str, Any]:
        """The JSON form with the calls and tools as :class:`Items` (see ``to_dict``)."""
        return {
            "swarmkit_cassette": CASSETTE_FORMAT,
            "swarmkit_version": self.swarmkit_version,
            "run": self.run,
            "calls": Items(self.calls),
            "tools": Items(self.tools),
        }

    def to_dict(self) -> dict[str, Any]:
        return plain(self.shape())

    def dumps(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False) + "\n"

    def json_parts(self) -> Iterator[str]:
        """The text of ``dumps(indent=None)`` in pieces, a call at a time."""
        yield from json_pieces(self.shape())
        yield "\n"

    @classmethod
    def loads(cls, text: str | bytes, source: str = "<text>") -> Cassette:
        try:
            data = parse_json(text)
        except ValueError as exc:
            raise CassetteError(
                f"cassette {source} is not JSON ({exc}); it may be truncated, re-record it "
                "with --record"
            ) from None
        if not isinstance(data, dict) or "swarmkit_cassette" not in data:
            raise CassetteError(
                f"{source} is not a swarmkit cassette (no 'swarmkit_cassette' field); "
                "pass a file written by --record or run.export"
            )
        version = data["swarmkit_cassette"]
        written_by = data.get("swarmkit_version", "an unknown version")
        written_by = written_by if isinstance(written_by, str) else "an unknown version"
        if not isinstance(version, int) or isinstance(version, bool):
            shown = repr(version) if len(repr(version)) <= 20 else repr(version)[:19] + "…"
            raise CassetteError(
                f"cassette {source} is garbled: 'swarmkit_cassette' is {shown}, not a format "
                f"number (this swarmkit reads format {CASSETTE_FORMAT}); re-record it with "
                "--record"
            )
        if version > CASSETTE_FORMAT:
            raise CassetteError(
                f"cassette {source} has format {version} (written by swarmkit {written_by}), "
                f"newer than this swarmkit reads (format {CASSETTE_FORMAT}); upgrade swarmkit"
            )
        if version < CASSETTE_FORMAT:
            raise CassetteError(
                f"cassette {source} has old format {version}, which this swarmkit no longer "
                f"reads (it reads format {CASSETTE_FORMAT}); re-record it with --record"
            )
        try:
            checked = _FILE.validate(data)
        except ValidationError as exc:
            raise CassetteError(
                f"cassette {source} is garbled: {describe(exc)}; re-record it with --record"
            ) from None
        for index, call in enumerate(checked["calls"]):
            if call.response is None and call.error is None:
                raise CassetteError(
                    f"cassette {source} is garbled: calls[{index}] has neither a response "
                    "nor an error; re-record it with --record"
                )
        return cls(
            run=checked["run"],
            calls=tuple(checked["calls"]),
            tools=tuple(checked.get("tools") or ()),
            swarmkit_version=written_by,
            source=source,
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Cassette:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise CassetteError(
                f"cassette {os.fspath(path)} not found; record one with --record "
                f"{os.fspath(path)} (or record=) first"
            ) from None
        except UnicodeDecodeError:
            raise CassetteError(
                f"cassette {os.fspath(path)} is not JSON text (it holds binary data); "
                "re-record it with --record"
            ) from None
        except OSError as exc:
            raise CassetteError(
                f"cannot read cassette {os.fspath(path)} ({exc.strerror}); check the path"
            ) from None
        return cls.loads(text, os.fspath(path))

    def save(self, path: str | os.PathLike[str], secrets: Mapping[str, str]) -> Path:
        """Write atomically (a reader never sees half a file); refuse if a key would leak."""
        target = Path(path)
        text = self.dumps()
        leaked = find_secret(text, secrets)
        if leaked is not None:
            raise CassetteError(
                f"not writing cassette {target}: it would contain the value of {leaked}; "
                "keep the key out of prompts and tool results"
            )
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            handle, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.",
                                            suffix=".tmp")
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as out:
                    out.write(text)
                os.replace(temp, target)
            except BaseException:
                Path(temp).unlink(missing_ok=True)
                raise
        except OSError as exc:
            raise CassetteError(
                f"cannot write cassette {target} ({exc.strerror}); choose a writable path"
            ) from None
        return target
