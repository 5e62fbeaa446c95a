"""Errors in a front end's own words: the flag the user typed, the flag they meant.

Both command lines (the ``%%swarm`` magic and the ``jswarm`` command) say
``unknown option --wokers (did you mean --workers?)`` for a misspelt flag, and name
the flag where a config error names its option (``--workers must be a whole number``,
not ``max_workers must be ...``). Each passes its own flags in; this module knows none.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence

__all__ = ["closest", "name_the_flag", "unknown_option"]

# How alike a typo and a flag must be (difflib's ratio) to be offered as "did you mean".
_CUTOFF = 0.6
# A config error starts with the option's name (after a role, for a role option) and a
# space: "budget must be ...", never "otel=True needs ...".
_FIRST_NAME = re.compile(r"(?:(?:planner|worker|reducer) )?([a-z][a-z_]*)(?= )")


def closest(typed: str, choices: Iterable[str]) -> str | None:
    """The choice spelt most like ``typed``, or None when none is close."""
    close = difflib.get_close_matches(typed, list(choices), n=1, cutoff=_CUTOFF)
    return close[0] if close else None


def unknown_option(unknown: Sequence[str], flags: Iterable[str]) -> str:
    """``unknown option --wokers (did you mean --workers?)`` for the first unknown flag
    in ``unknown`` (words a parser did not take); a stray value is named as one."""
    options = [arg for arg in unknown if arg.startswith("-")]
    if not options:
        return f"unexpected value {unknown[0]!r}: every value follows its --option"
    typed = options[0].split("=", 1)[0]
    near = closest(typed, flags)
    return f"unknown option {typed}" + (f" (did you mean {near}?)" if near else "")


def name_the_flag(message: str, exact: Mapping[str, str],
                  near: Mapping[str, str] | None = None) -> str:
    """``message`` (a config error) starting with the flag the user typed.

    ``exact`` maps each name an error may give an option the user set (its public name,
    its field) to the flag they typed; ``near`` (default ``exact``) maps names that a
    longer name may start or end with (``max_tokens`` in ``reducer_max_tokens``). So
    ``max_workers must be a whole number`` for ``--workers many`` becomes ``--workers
    must be a whole number``. A message about no such name comes back as it was.
    """
    word = _FIRST_NAME.match(message)
    if word is None:
        return message
    name = word.group(1)
    flag = exact.get(name)
    if flag is None:
        flag = next((flag for key, flag in (exact if near is None else near).items()
                     if name.endswith("_" + key) or name.startswith(key + "_")), None)
    return message if flag is None else flag + message[word.end():]
