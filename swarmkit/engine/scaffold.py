"""swarmkit's own prompt wording, kept out of the answers that models echo it into.

Small models (the embedded 135M one above all) repeat the labels of the messages they
were sent: a worker's "Your sub-task (4 of 4): ..." line, the reducer's "Worker 2
(sub-task: ...):" headings. Those lines are swarmkit's scaffolding, not an answer, so a
worker's output and the reducer's answer drop every line that starts with one of the
labels below (as written by ``engine.worker.worker_messages`` and
``engine.reducerinput``). Nothing else in an answer is touched. It applies to the
embedded model's answers only (``local`` roles): a hosted model does not echo them, and a
test server that echoes its prompt on purpose keeps doing so. The recorded call keeps
what the model said: the Run's ``calls`` are the evidence.
"""

from __future__ import annotations

import re

__all__ = ["without_scaffold"]

_LABELS = re.compile(
    r"^[ \t>*_#-]*(?:"
    r"overall task:"
    r"|your sub-?task \(\d+ of \d+\)"
    r"|worker \d+ \(sub-?task:"
    r"|partial answer \d+\.\d+ \(workers"
    r")[^\n]*(?:\n|$)",
    re.IGNORECASE | re.MULTILINE,
)


def without_scaffold(text: str, *, local: bool = True) -> str:
    """``text`` without the lines that echo swarmkit's prompt labels (see module doc);
    unchanged unless ``local`` (the answer came from the embedded model)."""
    if not local or ("ask" not in text and "orker" not in text and "artial" not in text):
        return text  # the common case: no label word at all, nothing to scan
    cleaned = _LABELS.sub("", text)
    return cleaned.strip() if cleaned != text else text
