"""``jswarm``'s exit statuses: one table, read by the command's help and by scripts.

A module of its own, importing nothing: ``launch`` needs the status of an interrupt
before anything heavy is loaded.
"""

from __future__ import annotations

__all__ = ["EXIT_CODES", "EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_PARTIAL",
           "EXIT_TIMED_OUT", "EXIT_USAGE", "exit_codes_text"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_PARTIAL = 0, 1, 2, 3
EXIT_TIMED_OUT, EXIT_INTERRUPTED = 124, 130  # as timeout(1) and a shell's 128 + SIGINT
EXIT_CODES = {EXIT_OK: "completed", EXIT_FAILED: "the run failed",
              EXIT_USAGE: "a bad option or value, a missing key, a refused resume, a plan "
                          "held by --confirm-over and not approved",
              EXIT_PARTIAL: "partial: an answer, but some workers failed or were cancelled",
              EXIT_TIMED_OUT: "timed out (--run-timeout)", EXIT_INTERRUPTED: "interrupted"}


def exit_codes_text() -> str:
    """The exit statuses, one a line, for a command's help."""
    return "exit status:\n" + "\n".join(f"  {code:<4} {what}" for code, what in EXIT_CODES.items())
