"""``Usage``: the tokens (and requests) of one call or of a sum of calls."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .schema import Count

__all__ = ["Usage"]


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one call or a sum of calls. ``None`` means the server did not say."""

    prompt_tokens: Count | None = 0
    completion_tokens: Count | None = 0
    cached_tokens: Count | None = 0
    reasoning_tokens: Count | None = 0
    requests: Count = 0

    @property
    def total_tokens(self) -> int | None:
        if self.prompt_tokens is None or self.completion_tokens is None:
            return None
        return self.prompt_tokens + self.completion_tokens

    def add(self, other: Usage) -> Usage:
        def plus(a: int | None, b: int | None) -> int | None:
            return None if a is None or b is None else a + b

        return Usage(
            prompt_tokens=plus(self.prompt_tokens, other.prompt_tokens),
            completion_tokens=plus(self.completion_tokens, other.completion_tokens),
            cached_tokens=plus(self.cached_tokens, other.cached_tokens),
            reasoning_tokens=plus(self.reasoning_tokens, other.reasoning_tokens),
            requests=self.requests + other.requests,
        )

    def to_dict(self) -> dict[str, int | None]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached_tokens": self.cached_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "requests": self.requests,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Usage:
        return cls(
            prompt_tokens=data.get("prompt_tokens"),
            completion_tokens=data.get("completion_tokens"),
            cached_tokens=data.get("cached_tokens"),
            reasoning_tokens=data.get("reasoning_tokens"),
            requests=int(data.get("requests", 1)),
        )
