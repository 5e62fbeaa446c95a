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
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

from ..calls import ChatResponse
from ..config import AUTO_MODEL, LOCAL_MODEL, ROLES, SwarmConfig
from ..errors import CassetteError
from ..records import decimal_or_none
from .secrets import find_secret

__all__ = ["CASSETTE_FORMAT", "Cassette", "RecordedCall", "RecordedTool"]

CASSETTE_FORMAT = 1


class _Reader:
    """Typed field access that turns any malformed part into one CassetteError line."""

    def __init__(self, source: str) -> None:
        self.source = source

    def garbled(self, where: str, what: str) -> CassetteError:
        return CassetteError(
            f"cassette {self.source} is garbled: {where} {what}; re-record it with --record"
        )

    def get(self, data: Mapping[str, Any], key: str, kind: Any, where: str,
            optional: bool = False) -> Any:
        value = data.get(key)
        if value is None and optional:
            return None
        # bool is an int subclass; a cassette with true for a count is garbled, not 1.
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            name = kind.__name__ if isinstance(kind, type) else "number"
            raise self.garbled(where, f"has no valid {key!r} ({name})")
        return value

    def mapping(self, value: Any, where: str) -> Mapping[str, Any]:
        if not isinstance(value, dict):
            raise self.garbled(where, "is not a JSON object")
        return value


_NUMBER = (int, float)


@dataclass(frozen=True, slots=True)
class RecordedCall:
    """One model call as recorded: what was asked, what came back, what the tables showed."""

    step: str
    role: str
    fingerprint: str
    occurrence: int
    request: dict[str, Any]
    response: dict[str, Any] | None  # None when the call failed
    source: str  # how the recording run was served: live or cache
    started: float
    latency: float
    attempts: int
    cost_usd: Decimal | None
    error: str | None = None
    error_type: str | None = None  # ProviderError or ResponseFormatUnsupported
    status: int | None = None
    retries: tuple[dict[str, Any], ...] = ()

    def chat_response(self) -> ChatResponse:
        return ChatResponse.from_dict(self.response or {})

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

    @classmethod
    def parse(cls, data: Any, where: str, reader: _Reader) -> RecordedCall:
        data = reader.mapping(data, where)
        response = reader.get(data, "response", dict, where, optional=True)
        error = reader.get(data, "error", str, where, optional=True)
        if response is None and error is None:
            raise reader.garbled(where, "has neither a response nor an error")
        try:
            cost = decimal_or_none(reader.get(data, "cost_usd", str, where, optional=True))
            if response is not None:
                ChatResponse.from_dict(response)
        except (ArithmeticError, KeyError, TypeError, ValueError):
            raise reader.garbled(where, "has an unreadable response or cost") from None
        retries = reader.get(data, "retries", list, where, optional=True) or []
        return cls(
            step=reader.get(data, "step", str, where),
            role=reader.get(data, "role", str, where),
            fingerprint=reader.get(data, "fingerprint", str, where),
            occurrence=reader.get(data, "occurrence", int, where),
            request=reader.get(data, "request", dict, where),
            response=response,
            source=reader.get(data, "source", str, where),
            started=float(reader.get(data, "started", _NUMBER, where)),
            latency=float(reader.get(data, "latency", _NUMBER, where)),
            attempts=reader.get(data, "attempts", int, where),
            cost_usd=cost,
            error=error,
            error_type=reader.get(data, "error_type", str, where, optional=True),
            status=reader.get(data, "status", int, where, optional=True),
            retries=tuple(_parse_retry(r, f"{where}.retries[{i}]", reader)
                          for i, r in enumerate(retries)),
        )


def _parse_retry(data: Any, where: str, reader: _Reader) -> dict[str, Any]:
    """A recorded CallRetried event, checked so replay can emit it as is."""
    data = reader.mapping(data, where)
    return {
        "step": reader.get(data, "step", str, where),
        "attempt": reader.get(data, "attempt", int, where),
        "error": reader.get(data, "error", str, where),
        "delay": float(reader.get(data, "delay", _NUMBER, where)),
        "status": reader.get(data, "status", int, where, optional=True),
        "t": float(reader.get(data, "t", _NUMBER, where)),
    }


@dataclass(frozen=True, slots=True)
class RecordedTool:
    """One tool execution as recorded; replay returns it instead of running the tool."""

    step: str
    hop: int
    name: str
    arguments: str
    occurrence: int
    result: str | None
    error: str | None
    duration: float
    started: float | None

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

    @classmethod
    def parse(cls, data: Any, where: str, reader: _Reader) -> RecordedTool:
        data = reader.mapping(data, where)
        started = reader.get(data, "started", _NUMBER, where, optional=True)
        return cls(
            step=reader.get(data, "step", str, where),
            hop=reader.get(data, "hop", int, where),
            name=reader.get(data, "name", str, where),
            arguments=reader.get(data, "arguments", str, where),
            occurrence=reader.get(data, "occurrence", int, where),
            result=reader.get(data, "result", str, where, optional=True),
            error=reader.get(data, "error", str, where, optional=True),
            duration=float(reader.get(data, "duration", _NUMBER, where)),
            started=None if started is None else float(started),
        )


@dataclass(frozen=True)
class Cassette:
    """A recorded run. Build one with :meth:`load` / :meth:`loads` or by recording."""

    run: dict[str, Any]
    calls: tuple[RecordedCall, ...] = ()
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

    def resolve_config(self, config: SwarmConfig) -> SwarmConfig:
        """Pin ``auto``/``local`` roles to the recorded models, so replay starts no server."""
        recorded = self.run.get("config") or {}
        roles = {}
        for role in ROLES:
            current = config.role(role)
            model = (recorded.get(role) or {}).get("model")
            if current.model in (AUTO_MODEL, LOCAL_MODEL) and isinstance(model, str):
                roles[role] = replace(current, model=model)
        return replace(config, **roles) if roles else config

    # -- JSON ----------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "swarmkit_cassette": CASSETTE_FORMAT,
            "swarmkit_version": self.swarmkit_version,
            "run": self.run,
            "calls": [call.to_dict() for call in self.calls],
            "tools": [tool.to_dict() for tool in self.tools],
        }

    def dumps(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False) + "\n"

    @classmethod
    def loads(cls, text: str, source: str = "<text>") -> Cassette:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CassetteError(
                f"cassette {source} is not JSON (line {exc.lineno}, column {exc.colno}: "
                f"{exc.msg}); it may be truncated, re-record it with --record"
            ) from None
        if not isinstance(data, dict) or "swarmkit_cassette" not in data:
            raise CassetteError(
                f"{source} is not a swarmkit cassette (no 'swarmkit_cassette' field); "
                "pass a file written by --record or run.export"
            )
        version = data["swarmkit_cassette"]
        reader = _Reader(source)
        if not isinstance(version, int) or isinstance(version, bool):
            raise reader.garbled("'swarmkit_cassette'", f"is {version!r}, not a format number")
        written_by = data.get("swarmkit_version", "an unknown version")
        if version > CASSETTE_FORMAT:
            raise CassetteError(
                f"cassette {source} has format {version} (written by swarmkit {written_by}), "
                f"newer than this swarmkit reads (format {CASSETTE_FORMAT}); upgrade swarmkit"
            )
        if version < CASSETTE_FORMAT:
            raise CassetteError(
                f"cassette {source} has old format {version}, which this swarmkit no longer "
                "reads; re-record it with --record"
            )
        run = dict(reader.mapping(data.get("run"), "'run'"))
        for key, kind in (("run_id", str), ("started_at", str), ("task", str),
                          ("duration", _NUMBER)):
            reader.get(run, key, kind, "'run'")
        calls = reader.get(data, "calls", list, "the top level")
        tools = reader.get(data, "tools", list, "the top level", optional=True) or []
        return cls(
            run=run,
            calls=tuple(RecordedCall.parse(c, f"calls[{i}]", reader) for i, c in
                        enumerate(calls)),
            tools=tuple(RecordedTool.parse(t, f"tools[{i}]", reader) for i, t in
                        enumerate(tools)),
            swarmkit_version=str(written_by),
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
                f"not writing cassette {target}: it would contain the value of ${leaked}; "
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
