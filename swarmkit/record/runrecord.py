"""``RunRecord``: the complete record of one swarm, built only from events, JSON round-trippable.

The engine, the store, the display and export all work on this value; the user's
:class:`swarmkit.Run` is this record plus its tables, reprs and ``export``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import ValidationError

from ..config.outputschema import schema_fields
from ..config.wording import counted
from ..errors import ConfigError, RecordError
from .fileshapes import Count, RecordedConfig, Schema, Seconds, describe, parse_json, shaped_like
from .jsontext import Items, json_pieces, plain
from .rows import BatchRecord, CallRecord, RetryRecord, ScoreRecord, ToolCallRecord, WorkerRecord
from .usage import Usage

if TYPE_CHECKING:
    import pandas

__all__ = ["RUN_FORMAT", "RunRecord", "RunStatus"]

# "stopped": the fan-out was stopped by the user and the reducer merged what finished.
# "planned": a dry-run (--dry-run): only the planner ran, and nothing else ever will unless
# asked to (plan_from=); a resume refuses one.
RunStatus = Literal["running", "completed", "partial", "stopped", "failed", "cancelled",
                    "planned"]
RUN_FORMAT = 1


@dataclass(eq=False)
class RunRecord:
    """Everything a run did. Tables, exports and history all read from here."""

    run_id: str
    task: str
    config: Annotated[dict[str, Any], shaped_like(RecordedConfig)] = field(default_factory=dict)
    started_at: str = ""
    status: RunStatus = "running"
    plan: list[str] = field(default_factory=list)
    plan_raw: str = ""
    workers: list[WorkerRecord] = field(default_factory=list)
    calls: list[CallRecord] = field(default_factory=list)
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    retries: list[RetryRecord] = field(default_factory=list)
    reduced: list[Count] = field(default_factory=list)  # workers whose output the reducer got
    answer: str | None = None
    error: str | None = None
    duration: Seconds = 0.0
    # The Batch API batches its workers went to (--batch); older files have none.
    batches: list[BatchRecord] = field(default_factory=list)
    # What the checks and the judge made of the answer (checks=, judge=); older files
    # and unscored runs have none, and their JSON has no "scores" key at all.
    scores: tuple[ScoreRecord, ...] = ()
    # The checks that scored this run (``swarmkit.Check`` values), in this process only:
    # an export writes them into its notebook so the replay scores again. Never written
    # to or read from JSON: a file must not hand export code to run.
    checks: tuple[object, ...] = field(default=(), init=False, repr=False, compare=False)
    # The history database this record was read from (set by History.load_run only): where
    # export looks for its cassette. Never read from JSON, so a file cannot name one.
    history_file: Path | None = field(default=None, init=False, repr=False, compare=False)

    # -- totals ----------------------------------------------------------------------

    @property
    def usage(self) -> Usage:
        """The sum of every call's usage, cost included."""
        return Usage.total(call.usage for call in self.calls)

    @property
    def cost_usd(self) -> Decimal | None:
        """What every call cost; None when any call's cost is unknown."""
        return self.usage.cost

    @property
    def models(self) -> dict[str, str]:
        return {role: self.config.get(role, {}).get("model", "?") for role in _ROLES}

    def worker(self, index: int | str) -> WorkerRecord:
        """Worker ``index`` of the plan, or any worker of a tree by its dotted id
        (``"2.1"``)."""
        wanted = str(index)
        for record in self.walk():
            if record.id == wanted:
                return record
        raise KeyError(f"run {self.run_id} has no worker {index}")

    def walk(self) -> Iterator[WorkerRecord]:
        """Every worker, a tree's children after their parent (depth first); at depth 1,
        ``workers`` itself."""
        for record in self.workers:
            yield from record.walk()

    def status_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for record in self.workers:
            counts[record.status_label] = counts.get(record.status_label, 0) + 1
        return counts

    def __eq__(self, other: object) -> bool:
        # A Run and the RunRecord it was read back as are equal: same fields, same values.
        if not isinstance(other, RunRecord):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in _COMPARED)

    __hash__ = None  # type: ignore[assignment]  # mutable, like any eq dataclass

    def __repr__(self) -> str:
        cost = "unknown" if self.cost_usd is None else f"${self.cost_usd:.6f}"
        return (
            f"<Run {self.run_id} {self.status}: {counted(len(self.workers), 'worker')}, "
            f"{self.usage.total_tokens} tokens, {cost}>"
        )

    def to_dataframe(self) -> pandas.DataFrame:
        """The per-worker table as a pandas DataFrame (needs pandas). With an output
        schema (``--schema``), each top-level field of a worker's ``data`` is a column
        too (``data_<name>`` where a worker column has that name already)."""
        try:
            import pandas
        except ImportError:
            raise ConfigError("to_dataframe needs pandas: pip install pandas") from None
        schema = self.config.get("output_schema")
        fields = schema_fields(schema if isinstance(schema, str) else None)
        rows = []
        for worker in self.workers:
            row = worker.to_dict()
            data = worker.data if isinstance(worker.data, dict) else {}
            for name in fields:
                row["data_" + name if name in row else name] = data.get(name)
            rows.append(row)
        return pandas.DataFrame(rows)

    # -- JSON ------------------------------------------------------------------------

    def shape(self) -> dict[str, Any]:
        """The JSON form with its long lists as :class:`Items`: ``to_dict`` makes them
        lists, ``json_parts`` encodes them one record at a time."""
        return {
            "format": RUN_FORMAT,
            "run_id": self.run_id,
            "task": self.task,
            "config": self.config,
            "started_at": self.started_at,
            "status": self.status,
            "plan": list(self.plan),
            "plan_raw": self.plan_raw,
            "workers": Items(self.workers),
            "calls": Items(self.calls),
            "tool_calls": Items(self.tool_calls),
            "retries": Items(self.retries),
            "reduced": list(self.reduced),
            "answer": self.answer,
            "error": self.error,
            "duration": self.duration,
            **({"batches": Items(self.batches)} if self.batches else {}),
            **({"scores": Items(self.scores)} if self.scores else {}),
        }

    def to_dict(self) -> dict[str, Any]:
        return plain(self.shape())

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def json_parts(self) -> Iterator[str]:
        """The text of ``to_json(indent=None)`` in pieces, a record at a time: a large run
        is written without its whole dict tree or text in memory."""
        return json_pieces(self.shape())

    @classmethod
    def from_dict(cls, data: Any, source: str = "Run JSON") -> RunRecord:
        """The record that ``to_dict`` gave; a one-line RecordError naming ``source`` and the
        field if ``data`` is of another format version or does not fit the field types."""
        if not isinstance(data, dict):
            raise RecordError(f"{source} is not a Run: a JSON object was expected, "
                              f"not {type(data).__name__}; pass text from Run.to_json()")
        version = data.get("format")
        if version != RUN_FORMAT or isinstance(version, bool):
            shown = "no 'format' field" if version is None else f"format {_short(version)}"
            newer = isinstance(version, int) and version > RUN_FORMAT
            raise RecordError(
                f"{source} has {shown}; this swarmkit reads Run JSON format {RUN_FORMAT} "
                f"only{' (upgrade swarmkit)' if newer else ''}"
            )
        try:
            return _RUN.validate(data)
        except ValidationError as exc:
            raise RecordError(f"{source} is garbled: {describe(exc)}; pass text from "
                              "Run.to_json()") from None

    @classmethod
    def from_json(cls, text: str | bytes, source: str = "Run JSON") -> RunRecord:
        try:
            data = parse_json(text)
        except ValueError as exc:
            raise RecordError(f"{source} is not JSON ({exc}); it may be truncated") from None
        return cls.from_dict(data, source)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 20 else text[:19] + "…"


_ROLES = ("planner", "worker", "reducer")
_RUN: Schema[RunRecord] = Schema(RunRecord)
_COMPARED = tuple(f.name for f in fields(RunRecord) if f.compare)
