"""Per-key request and token rate limits over a sliding window, as providers enforce them."""

from __future__ import annotations

import threading
from collections import deque

__all__ = ["RateLimiter"]


class RateLimiter:
    """Admits requests per key (the Authorization header) under ``rpm``/``tpm`` limits.

    ``window`` is the length of the sliding window in seconds (60 for real "per minute";
    tests shorten it). A request's tokens are its prompt estimate plus its ``max_tokens``,
    reserved on arrival as OpenAI does. Refused requests use none of the allowance.
    """

    def __init__(self, rpm: int | None, tpm: int | None, window: float = 60.0) -> None:
        self.rpm = rpm
        self.tpm = tpm
        self.window = window
        self._entries: dict[str, deque[tuple[float, int]]] = {}
        self._lock = threading.Lock()

    @property
    def active(self) -> bool:
        return self.rpm is not None or self.tpm is not None

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def admit(self, key: str, tokens: int, now: float) -> float | None:
        """None when the request may proceed, else seconds until it could."""
        with self._lock:
            entries = self._entries.setdefault(key, deque())
            while entries and entries[0][0] <= now - self.window:
                entries.popleft()
            if self.rpm is not None and len(entries) >= self.rpm:
                return max(0.001, entries[0][0] + self.window - now)
            if self.tpm is not None:
                excess = sum(t for _, t in entries) + tokens - self.tpm
                if excess > 0:
                    freed = 0
                    for stamp, used in entries:
                        freed += used
                        if freed >= excess:
                            return max(0.001, stamp + self.window - now)
                    return self.window  # larger than the whole allowance: never fits
            entries.append((now, tokens))
        return None
