"""``Halt``: why a run is being cut short, set by the engine and read by its steps."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["STOPPED", "Halt"]

# The reason a worker stopped by "stop and merge" is recorded with, and the run's status.
STOPPED = "stopped"


@dataclass(slots=True)
class Halt:
    """``cancel``: the run is cancelled (timeout, interrupt, ...); ``stop``: the fan-out
    stops and the reducer merges what finished. Both None while the run goes on."""

    cancel: str | None = None
    stop: str | None = None

    @property
    def reason(self) -> str | None:
        """What a call or worker cut short now is recorded with (a cancel wins)."""
        return self.cancel or self.stop
