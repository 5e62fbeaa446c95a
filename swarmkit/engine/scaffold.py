"""swarmkit's own prompt wording, kept out of the answers that models echo it into.

Small models (the embedded 135M one above all) repeat the labels of the messages they
were sent: a worker's "Your sub-task (4 of 4): ..." line, the reducer's "Worker 2
(sub-task: ...):" headings. Those lines are swarmkit's scaffolding, not an answer, so a
worker's output and the reducer's answer drop every line that starts with one of the
labels below (as written by ``engine.worker.worker_messages`` and
``engine.reducerinput``): a restated prompt line goes whole, a reducer input's heading
goes and the text after it on its line stays, and a sentence in swarmkit's own words
("sub-task", "Worker 2", "the workers' answers") goes whole. Nothing else in an answer is
touched. It
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

# With the small local model's prompts (``thorough``), also: the task restated ("Task:
# ..."), its sentence dropped; a heading as "Worker 2:", "Worker 2 (sub-task: ...)." or
# "Notes on ...:", at a line's start or a sentence's; and any sentence that talks about
# swarmkit's machinery rather than the task ("Your sub-task is to compare ...", "The
# workers' answers agree ...", "the notes"), dropped whole.
_RESTATED_TASK = re.compile(r"^[ \t>*_#-]*task:[^\n]*?(?:[.?!][ \t]+|\n|$)",
                            re.IGNORECASE | re.MULTILINE)
_ANY_HEADING = re.compile(
    r"(?:^|(?<=[.!?\"] ))[ \t>*_#-]*(?:worker \d+(?: \(sub-?task:[^\n]*?\))?"
    r"|partial answer \d+\.\d+ \(workers[^\n]*?\)|notes on [^\n:]{1,200})[ \t]*[:.][ \t]*",
    re.IGNORECASE | re.MULTILINE,
)
_OWN_WORDS = re.compile(r"\bsub-?tasks?\b|\bworkers?(?:'s?)? answers?\b|\bworker \d+\b"
                        r"|\b(?:the|these) notes\b", re.IGNORECASE)
_SENTENCE = re.compile(r"[^.!?\n]*(?:[.!?]+[\"')\]]*|\n|$)")


# A sentence that shares this many words in a row with the role's own prompt repeats it.
_ECHO_WORDS = 5


def _runs(text: str) -> set[tuple[str, ...]]:
    words = re.findall(r"[a-z0-9']+", text.casefold())
    return {tuple(words[i:i + _ECHO_WORDS]) for i in range(len(words) - _ECHO_WORDS + 1)}


def _without_own_sentences(text: str, prompt: str) -> str:
    echoed = _runs(prompt)
    return "".join(piece for piece in _SENTENCE.findall(text)
                   if not _OWN_WORDS.search(piece) and not _runs(piece) & echoed)


def without_scaffold(text: str, *, local: bool = True, thorough: bool = False,
                     prompt: str = "") -> str:
    """``text`` without swarmkit's echoed prompt labels (see module doc); unchanged unless
    ``local`` (the answer came from a local model), and never emptied: an answer that
    was nothing but labels is kept as it came, for the reader to judge.

    ``thorough``: the role ran with the small local model's prompt (``LOCAL_SYSTEM_PROMPT``,
    ``LOCAL_REDUCER_PROMPT``), so its own words go too (see above), and so does a
    sentence that repeats five words in a row of that ``prompt``. A run recorded with
    the default prompts gets the cleanup it had then, so its replay renders the same.
    """
    words = ("ask", "orker", "artial", "otes") if thorough else ("ask", "orker", "artial")
    if not local or not ((thorough and prompt) or any(word in text for word in words)):
        return text  # the common case: no label word at all, nothing to scan
    if thorough:
        cleaned = _ANY_HEADING.sub("", _RESTATED_TASK.sub("", _RESTATED.sub("", text)))
        cleaned = _without_own_sentences(cleaned, prompt).strip()
        cleaned = re.sub(r"[ \t]+\n", "\n", re.sub(r"\n{3,}", "\n\n", cleaned))
    else:
        cleaned = _HEADING.sub("", _RESTATED.sub("", text)).strip()
    return cleaned if cleaned and cleaned != text.strip() else text
