"""Faults the fake server can inject, and the rules that decide which requests get them.

A :class:`Fault` is what goes wrong (a 429, an HTML 502 page, a dropped connection, ...).
A :class:`FaultRule` says which requests get it: a step glob, how many attempts of each
matching step (``attempts=k`` makes it transient, ``None`` permanent) and a probability.
An HTTP error fault may carry any response headers (``headers=``), e.g. those a relay
adds: :meth:`Fault.litellm_rate_limit` is a 429 as LiteLLM's proxy passes one on.
"""

from __future__ import annotations

import fnmatch
import json
import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["FORMAT_REFUSALS", "LITELLM_NO_DB_BODY", "Fault", "FaultKind", "FaultRule",
           "seconds_text"]

FaultKind = Literal[
    "status", "html", "drop", "stall", "malformed", "stream_cut", "stream_error"
]

# What llama.cpp's server answers when given response_format of type json_schema.
LLAMA_CPP_JSON_SCHEMA_BODY = (
    '{"error":{"code":500,"type":"server_error","message":"1 validation error for '
    "CreateChatCompletionRequest\\nresponse_format.type\\n  Input should be 'text' or "
    "'json_object' [type=literal_error, input_value='json_schema', input_type=str]\"}}"
)

# LiteLLM's proxy (1.106, no database configured) answering a key that is not its
# master_key: it would look the key up in a database it does not have. HTTP 400.
LITELLM_NO_DB_BODY = json.dumps({"error": {
    "message": "No connected db.", "type": "no_db_connection", "param": "None", "code": "400"}})

# How each server refuses a response_format it does not take: (status, body) as sent.
FORMAT_REFUSALS: dict[str, tuple[int, str]] = {
    # llama-cpp-python 0.3, json_schema: its pydantic error with the traceback it appends.
    "llama-cpp-python": (500, json.dumps({"error": {
        "message": "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', "
        "'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", "
        "'input': 'json_schema', 'ctx': {'expected': \"'text' or 'json_object'\"}}\n\n  File "
        '"/usr/lib/python3/site-packages/llama_cpp/server/app.py", line 376, in '
        "create_chat_completion\n    POST /v1/chat/completions",
        "type": "internal_server_error", "param": None, "code": None}})),
    # llama.cpp's C++ llama-server before json_schema support (and ik_llama.cpp).
    "llama-server": (500, json.dumps({"error": {
        "code": 500, "type": "server_error",
        "message": 'response_format type must be one of "text" or "json_object", '
        "but got: json_schema"}})),
    # LM Studio 0.3, json_object: the error is a bare string.
    "lm-studio": (400, json.dumps(
        {"error": "'response_format.type' must be 'json_schema' or 'text'"})),
    # vLLM, a schema its grammar backend cannot compile; its own error shape.
    "vllm": (400, json.dumps({
        "object": "error", "message": "The provided JSON schema contains features not "
        "supported by xgrammar.", "type": "BadRequestError", "param": None, "code": 400})),
    # LiteLLM's proxy in front of a model without JSON mode: any response_format.
    "litellm": (400, json.dumps({"error": {
        "message": "litellm.UnsupportedParamsError: ollama does not support parameters: "
        "['response_format'], for model=llama2. To drop these, set `litellm.drop_params=True` "
        "or for proxy:\n\n`litellm_settings:\n drop_params: true`\n",
        "type": "None", "param": "None", "code": "400"}})),
}


def seconds_text(value: float) -> str:
    """A number of seconds as a header carries it: digits, never an exponent
    (``f"{10**9:g}"`` is ``1e+09``, which no client reads as a number); ``nan`` and
    ``inf`` as Python writes them, for the tests of a server that sends them."""
    number = float(value)
    if not math.isfinite(number):
        return str(number)
    if number.is_integer():
        return str(int(number))
    return f"{number:.6f}".rstrip("0").rstrip(".")


@dataclass(frozen=True, slots=True)
class Fault:
    """One misbehaviour of the server. Build it with the class methods."""

    kind: FaultKind
    http_status: int = 500
    body: str | None = None
    retry_after: float | str | None = None
    seconds: float = 0.0
    # Extra response headers of an HTTP error ("status" and "html"), sent as given.
    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def rate_limit(
        cls, retry_after: float | str | None = None, *,
        headers: Mapping[str, str] | None = None,
    ) -> Fault:
        """HTTP 429 with a JSON error, and a ``Retry-After`` header when given (a str is
        sent verbatim: an HTTP date, or the junk a broken server sends), plus
        ``headers``."""
        return cls("status", http_status=429, retry_after=retry_after,
                   headers=tuple((headers or {}).items()))

    @classmethod
    def status(
        cls, status: int = 500, *, body: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Fault:
        """An HTTP error with a JSON error body, or ``body`` verbatim when given, plus
        ``headers``."""
        return cls("status", http_status=status, body=body, headers=tuple((headers or {}).items()))

    @classmethod
    def litellm_rate_limit(cls, retry_after: float = 1.5) -> Fault:
        """A 429 as LiteLLM's proxy passes its upstream's on: the upstream's headers all
        get an ``llm_provider-`` prefix, so the wait is in ``llm_provider-retry-after``
        and there is no ``Retry-After``."""
        return cls.rate_limit(headers={"llm_provider-retry-after": seconds_text(retry_after)})

    @classmethod
    def litellm_no_db(cls) -> Fault:
        """LiteLLM's proxy without a database, given a key that is not its master_key."""
        return cls("status", http_status=400, body=LITELLM_NO_DB_BODY)

    @classmethod
    def html(cls, status: int = 502, *, headers: Mapping[str, str] | None = None) -> Fault:
        """An HTML error page, as a proxy or load balancer in front of a model sends, plus
        ``headers``."""
        return cls("html", http_status=status, headers=tuple((headers or {}).items()))

    @classmethod
    def drop(cls) -> Fault:
        """Close the connection without sending any response."""
        return cls("drop", http_status=0)

    @classmethod
    def stall(cls, seconds: float = 60.0) -> Fault:
        """Wait ``seconds`` before answering normally (set it past the client's timeout)."""
        return cls("stall", http_status=200, seconds=seconds)

    @classmethod
    def malformed(cls) -> Fault:
        """HTTP 200 whose body is garbled, not a chat completion."""
        return cls("malformed", http_status=200)

    @classmethod
    def stream_cut(cls) -> Fault:
        """Send part of the answer, then abort the connection (streamed or not)."""
        return cls("stream_cut", http_status=200)

    @classmethod
    def stream_error(cls, message: str = "The server is overloaded") -> Fault:
        """A streamed answer that starts, then sends an ``{"error": ...}`` event and ends
        (as OpenAI and vLLM do when a model fails mid-answer); a plain HTTP 500 when the
        request did not ask to stream."""
        return cls("stream_error", http_status=500, body=message)

    @classmethod
    def llama_cpp_json_schema(cls) -> Fault:
        """llama.cpp's answer to ``response_format`` of type json_schema: HTTP 500."""
        return cls("status", http_status=500, body=LLAMA_CPP_JSON_SCHEMA_BODY)

    @classmethod
    def format_refusal(cls, server: str) -> Fault:
        """How ``server`` (a key of FORMAT_REFUSALS) refuses a response_format."""
        status, body = FORMAT_REFUSALS[server]
        return cls("status", http_status=status, body=body)

    def html_page(self) -> str:
        reason = _REASONS.get(self.http_status, "Error")
        title = f"{self.http_status} {reason}"
        return (
            f"<html>\r\n<head><title>{title}</title></head>\r\n<body>\r\n"
            f"<center><h1>{title}</h1></center>\r\n<hr><center>nginx</center>\r\n"
            "</body>\r\n</html>\r\n"
        )

    def error_body(self) -> str:
        if self.body is not None:
            return self.body
        reason = _REASONS.get(self.http_status, "Error")
        kind = "rate_limit_exceeded" if self.http_status == 429 else "server_error"
        if 400 <= self.http_status < 500 and self.http_status != 429:
            kind = "invalid_request_error"
        message = f"fake server fault: HTTP {self.http_status} {reason}"
        return json.dumps({"error": {"message": message, "type": kind, "code": self.http_status}})


_REASONS = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    408: "Request Timeout",
    409: "Conflict",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


@dataclass(slots=True)
class FaultRule:
    """Give ``fault`` to requests whose step matches ``step`` (an fnmatch glob).

    ``attempts=k`` faults only attempts 1..k of each matching step, so the call succeeds
    on attempt k+1; ``attempts=None`` faults every attempt. ``probability`` below 1 draws
    from a generator seeded with ``seed``, so a given request order gives the same faults.
    """

    fault: Fault
    step: str = "*"
    attempts: int | None = None
    probability: float = 1.0
    seed: int = 0
    _rng: random.Random = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.attempts is not None and self.attempts < 0:
            raise ValueError(f"attempts must be >= 0 or None, got {self.attempts}")
        if not 0.0 <= self.probability <= 1.0:
            raise ValueError(f"probability must be within 0..1, got {self.probability}")
        self._rng = random.Random(self.seed)

    def applies(self, step: str, attempt: int) -> bool:
        """Whether this request gets the fault (draws from the generator when it may)."""
        if not fnmatch.fnmatchcase(step, self.step):
            return False
        if self.attempts is not None and attempt > self.attempts:
            return False
        return self.probability >= 1.0 or self._rng.random() < self.probability
