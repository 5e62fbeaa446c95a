"""Print this checkout's Binder link and badge, from its GitHub remote.

    python binder/link.py [REMOTE]        # REMOTE defaults to origin

A Binder link names the GitHub owner and repository (``mybinder.org/v2/gh/OWNER/REPO``),
which differ for every fork, so the README cannot carry one that works everywhere; this
prints the one for the repository the checkout was cloned from (or pushed to), opening
JupyterLab on the quickstart. It reads ``git remote get-url REMOTE`` and understands the
HTTPS and SSH forms of a github.com URL; anything else is one line on stderr, exit 2.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

__all__ = ["binder_url", "main"]

LAB_PATH = "notebooks%2F01-quickstart.ipynb"
BADGE = "https://mybinder.org/badge_logo.svg"
_GITHUB = re.compile(r"^(?:https?://(?:[^@/]+@)?github\.com/|git@github\.com:|ssh://git@github\.com/)"
                     r"([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+?)(?:\.git)?/?$")


def binder_url(remote_url: str) -> str:
    """The Binder launch link for the GitHub repository at ``remote_url``."""
    found = _GITHUB.match(remote_url.strip())
    if found is None:
        raise ValueError(f"{remote_url.strip()!r} is not a github.com repository URL; Binder "
                         "builds from GitHub: push the checkout there first")
    owner, repo = found.groups()
    return f"https://mybinder.org/v2/gh/{owner}/{repo}/HEAD?labpath={LAB_PATH}"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    remote = args[0] if args else "origin"
    done = subprocess.run(["git", "remote", "get-url", remote], capture_output=True,
                          text=True, cwd=Path(__file__).resolve().parent, check=False)
    if done.returncode != 0:
        sys.stderr.write(f"binder/link.py: this checkout has no git remote {remote!r}; add "
                         "one with git remote add origin https://github.com/OWNER/REPO\n")
        return 2
    try:
        url = binder_url(done.stdout)
    except ValueError as exc:
        sys.stderr.write(f"binder/link.py: {exc}\n")
        return 2
    print(url)
    print(f"[![Binder]({BADGE})]({url})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
