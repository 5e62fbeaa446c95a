"""The declared shape of what swarmkit reads back: Run JSON, cassettes, history rows.

Records (``Usage``, the rows in ``swarmkit.record.rows``, ``Run``, cassette entries) type
their fields with the aliases below, and pydantic checks a whole file or row against
those types once, where JSON or a database row becomes records. A crafted or damaged
file is then one line naming the file and the field, never an AttributeError,
OverflowError or KeyError deep in a table, the engine or the history writer.

Containers are lax (a JSON list is a tuple), numbers are strict: ``"12"`` and ``true``
are not counts, NaN and ``1e400`` are not times, and every count fits SQLite's 64-bit
integers even summed over a million rows.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from functools import cache
from typing import Annotated, Any, Generic, TypeVar

import pydantic_core
from pydantic import (
    AfterValidator,
    Field,
    PlainValidator,
    Strict,
    TypeAdapter,
    ValidationError,
    WrapValidator,
)
from typing_extensions import TypedDict  # pydantic reads typing's only from Python 3.12

__all__ = [
    "MAX_COST",
    "MAX_COUNT",
    "MAX_DEPTH",
    "MAX_SECONDS",
    "MAX_TOTAL_COST",
    "Cost",
    "Count",
    "Depth",
    "Flag",
    "Fraction",
    "Integer",
    "JSONObject",
    "JSONValue",
    "Number",
    "RecordedConfig",
    "RecordedRole",
    "Schema",
    "Seconds",
    "Total",
    "TotalCost",
    "WorkerId",
    "describe",
    "parse_json",
    "shaped_like",
]

T = TypeVar("T")

MAX_COUNT = 10**12  # tokens, attempts, indexes: a million of them still fit in 2**63
MAX_SECONDS = 10.0**9  # about 31 years: any real start offset, latency or duration
MAX_COST = Decimal(10) ** 9  # dollars
MAX_TOTAL_COST = Decimal(10) ** 30
_COST_DIGITS = 40  # significant digits: more is a crafted number, not a price


def _amount(limit: Decimal) -> Callable[[Any], Decimal | None]:
    """A cost as stored (a decimal string such as "0.000012") up to ``limit`` dollars, or
    None for unknown; a bounded number of digits, so formatting it stays cheap."""
    def check(value: Any) -> Decimal | None:
        if value is None or isinstance(value, Decimal):
            amount = value
        elif isinstance(value, str):
            try:
                amount = Decimal(value)
            except InvalidOperation:
                raise ValueError('should be a decimal string such as "0.0012"') from None
        else:
            raise ValueError('should be a decimal string such as "0.0012" or null')
        if amount is not None and not (
            amount.is_finite() and 0 <= amount <= limit
            and len(amount.as_tuple().digits) <= _COST_DIGITS
            and (amount == 0 or amount.adjusted() >= -_COST_DIGITS)
        ):
            raise ValueError(f"should be a finite amount from 0 to {limit} dollars")
        return amount

    return check


Count = Annotated[int, Strict(), Field(ge=0, le=MAX_COUNT)]
Integer = Annotated[int, Strict(), Field(ge=-MAX_COUNT, le=MAX_COUNT)]
# A worker's depth in a tree (1: the plan's workers); MAX_DEPTH bounds what a file holds.
MAX_DEPTH = 16
Depth = Annotated[int, Strict(), Field(ge=1, le=MAX_DEPTH)]
# A dotted worker id (``2``, ``2.1``, ``2.1.3``): a child's ``parent``.
WorkerId = Annotated[str, Field(pattern=r"^[1-9][0-9]{0,11}(\.[1-9][0-9]{0,11}){0,15}$")]
Seconds = Annotated[float, Strict(), Field(ge=0, le=MAX_SECONDS, allow_inf_nan=False)]
Number = Annotated[float, Strict(), Field(allow_inf_nan=False)]
# A score: 0 (failed) to 1 (passed), a check's or the judge's (score / 10).
Fraction = Annotated[float, Strict(), Field(ge=0, le=1, allow_inf_nan=False)]
Cost = Annotated[Decimal | None, PlainValidator(_amount(MAX_COST))]
# Sums over a run (a history row's totals): what SQLite's integers and a display can hold.
Total = Annotated[int, Strict(), Field(ge=0, le=2**63 - 1)]
TotalCost = Annotated[Decimal | None, PlainValidator(_amount(MAX_TOTAL_COST))]


def _finite(value: Any) -> Any:
    """``value`` if no number anywhere inside it is NaN or infinite (``1e400``): a file
    holding one could not be written back as JSON and read again."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise ValueError(f"holds the number {item}, which JSON cannot carry")
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return value


# A JSON object kept as read (a request body): any shape, but only finite numbers.
JSONObject = Annotated[dict[str, Any], AfterValidator(_finite)]
# Any JSON value (a typed worker output): kept as read, only finite numbers.
JSONValue = Annotated[Any, AfterValidator(_finite)]


def shaped_like(kind: Any) -> WrapValidator:
    """Check a JSON value against ``kind`` but keep the value itself, so what was read
    is what is written back (a response body, a config summary)."""
    def check(value: Any, handler: Callable[[Any], Any]) -> Any:
        value = handler(value)
        if value is not None:
            Schema(kind).validate(value)
        return _finite(value)

    return WrapValidator(check)


class Schema(Generic[T]):
    """The validator of one record type, built on first use and shared afterwards."""

    def __init__(self, kind: type[T] | Any) -> None:
        self.kind = kind

    def validate(self, data: Any) -> T:
        """``data`` (parsed JSON or a row as a dict) as a ``kind``; raises ValidationError."""
        return _adapter(self.kind).validate_python(data)  # type: ignore[no-any-return]


@cache
def _adapter(kind: Any) -> TypeAdapter[Any]:
    return TypeAdapter(kind)


_WHERE = re.compile(r"^(?P<msg>.*) at line (?P<line>\d+) column (?P<col>\d+)$")


def parse_json(text: str | bytes) -> Any:
    """JSON text as Python values; a ValueError says where it stops being JSON.

    pydantic's parser (not ``json``) so that a lone surrogate, which no file can be
    written with later, and an integer of thousands of digits are refused here.
    """
    if isinstance(text, str):
        try:
            text = text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(f"character {exc.start}: {exc.reason}") from None
    try:
        return pydantic_core.from_json(text)
    except ValueError as exc:
        found = _WHERE.match(str(exc))
        if found is None:
            raise ValueError(str(exc)) from None
        raise ValueError(f"line {found['line']}, column {found['col']}: {found['msg']}") from None


def _place(loc: tuple[int | str, ...]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            name = part if len(part) <= 40 else part[:39] + "…"
            text += f".{name}" if text else name
    return text or "the top level"


def describe(error: ValidationError) -> str:
    """The first problem as one line: ``calls[0].latency: Input should be a finite
    number (got inf)``, and how many more there are."""
    first = error.errors(include_url=False, include_context=False)[0]
    got = first.get("input")
    shown = "" if isinstance(got, dict | list) else f" (got {_short(got)})"
    more = error.error_count() - 1
    rest = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    message = first["msg"].removeprefix("Value error, ")
    for pydantic_word, json_word in _JSON_WORDS:
        message = message.replace(pydantic_word, json_word)
    text = f"{_place(first['loc'])}: {message}{shown}{rest}"
    return " ".join(text.split())


_JSON_WORDS = (("a valid dictionary", "a JSON object"), ("a valid list", "a JSON array"),
               ("a valid tuple", "a JSON array"), ("Field required", "missing"))


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


# -- the config summary a Run and a cassette carry (SwarmConfig.summary()) ----------------
# Only the fields swarmkit reads back are typed; others (newer options) pass unchecked.

Flag = Annotated[bool, Strict()]


class RecordedRole(TypedDict, total=False):
    model: str
    base_url: str | None
    api_key_env: list[str]
    max_tokens: Count | None
    temperature: Number | None
    seed: Integer | None


class RecordedConfig(TypedDict, total=False):
    planner: RecordedRole
    worker: RecordedRole
    reducer: RecordedRole
    # Only when a judge was set (SwarmConfig.summary leaves them out otherwise).
    judge: RecordedRole
    rubric: str | None
    repeat: Count
    # Only when a tree was asked for (SwarmConfig.summary leaves the defaults out).
    depth: Depth
    max_children: Count
    max_total_workers: Count | None
    max_workers: Count
    concurrency: Count
    budget_usd: Cost
    budget_tokens: Count | None
    system_prompt: str
    reducer_prompt: str
    planner_prompt: str
    call_timeout: Number
    run_timeout: Number | None
    max_attempts: Count
    backoff_base: Number
    backoff_max: Number
    stream_reducer: Flag
    output_schema: str | None
    max_tool_hops: Count
    tool_concurrency: Count
    max_tool_errors: Count
    max_tool_result_chars: Count
    max_tool_calls_per_turn: Count
    tool_timeout: Number
    rpm: Number | None
    tpm: Number | None
    rate_window: Number
    adaptive_concurrency: Flag
    start_jitter: Number | None
    cache: Flag
    record: str | None
    replay: str | None
    history_path: str | None
    history: Flag
    refresh: list[str]
    prices: list[tuple[str, str, str]]
    tasks: list[str]
    reduce: Flag
    auto_local: list[str]
    batch: Flag
    batch_poll: Number
