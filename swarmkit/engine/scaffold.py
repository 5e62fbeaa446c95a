"""swarmkit's own prompt wording, kept out of the answers that models echo it into.

Small models (the embedded 135M one above all) repeat the labels of the messages they
were sent: a worker's "Your sub-task (4 of 4): ..." line, the reducer's "Worker 2
(sub-task: ...):" headings. Those lines are swarmkit's scaffolding, not an answer, so a
worker's output and the reducer's answer drop every line that starts with one of the
labels below (as written by ``engine.worker.worker_messages`` and
``engine.reducerinput``): a restated prompt line goes whole, a reducer input's heading
goes and the text after it on its line stays. Nothing else in an answer is touched. It
applies to the embedded model's answers only (``local`` roles): a hosted model does not
echo them, and a test server that echoes its prompt on purpose keeps doing so. The
recorded call keeps what the model said: the Run's ``calls`` are the evidence.
"""

from __future__ import annotations

import re

__all__ = ["without_scaffold"]

# Lines that restate the worker's prompt: dropped whole.
_RESTATED = re.compile(
    r"^[ \t>*_#-]*(?:overall task:|your sub-?task \(\d+ of \d+\))[^\n]*(?:\n|$)",
    re.IGNORECASE | re.MULTILINE,
)
# The reducer's input headings, "Worker 2 (sub-task: ...):": the heading is dropped and
# what follows it on the line is kept (a model may answer on the heading's line).
_HEADING = re.compile(
    r"^[ \t>*_#-]*(?:worker \d+ \(sub-?task:[^\n]*?\)|partial answer \d+\.\d+ "
    r"\(workers[^\n]*?\)):[ \t]*",
    re.IGNORECASE | re.MULTILINE,
)


def without_scaffold(text: str, *, local: bool = True) -> str:
    """``text`` without swarmkit's echoed prompt labels (see module doc); unchanged unless
    ``local`` (the answer came from the embedded model), and never emptied: an answer that
    was nothing but labels is kept as it came, for the reader to judge."""
    if not local or ("ask" not in text and "orker" not in text and "artial" not in text):
        return text  # the common case: no label word at all, nothing to scan
    cleaned = _HEADING.sub("", _RESTATED.sub("", text)).strip()
    return cleaned if cleaned and cleaned != text.strip() else text
