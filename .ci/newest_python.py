"""Print the path of the newest installed CPython that pyproject's requires-python admits.

Candidates are ``python3.N`` on PATH and, when pyenv is present, every final release in
``$(pyenv root)/versions``. Each is asked for its own version, so a pyenv shim for a
version that is not active (it exits 127) is skipped. Exits 1 if none qualifies.

Only the standard library is used: CI runs this before any virtual environment exists.
requires-python is read with the operators PEP 440 allows on plain release numbers
(``>=3.11``, ``<3.15``, ``!=3.12.*``, ``==3.13.*``); anything else is refused loudly
rather than guessed.
"""

from __future__ import annotations

import operator
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

__all__ = ["admits", "candidates", "main"]

ROOT = Path(__file__).resolve().parent.parent
_CLAUSE = re.compile(r"^(>=|<=|==|!=|>|<)\s*(\d+(?:\.\d+)*)(\.\*)?$")
_COMPARE = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt}
Version = tuple[int, ...]


def _pad(version: Version, width: int) -> Version:
    return version + (0,) * (width - len(version))


def admits(spec: str, version: Version) -> bool:
    """Whether ``version`` (e.g. (3, 13, 0)) satisfies every clause of ``spec``."""
    for clause in filter(None, (part.strip() for part in spec.split(","))):
        match = _CLAUSE.match(clause)
        if match is None:
            raise SystemExit(f"newest_python: cannot read requires-python clause {clause!r}")
        op, number, wildcard = match.groups()
        bound = tuple(int(n) for n in number.split("."))
        if wildcard and op not in ("==", "!="):
            raise SystemExit(f"newest_python: cannot read requires-python clause {clause!r}")
        if op in ("==", "!="):
            # "==3.13.*" compares the parts given; "==3.13" means 3.13.0.
            width = max(len(bound), len(version))
            if wildcard:
                equal = _pad(version, width)[: len(bound)] == bound
            else:
                equal = _pad(version, width) == _pad(bound, width)
            ok = equal if op == "==" else not equal
        else:
            width = max(len(bound), len(version))
            ok = _COMPARE[op](_pad(version, width), _pad(bound, width))
        if not ok:
            return False
    return True


def candidates() -> list[str]:
    found = {shutil.which(f"python3.{minor}") for minor in range(8, 40)}
    pyenv = shutil.which("pyenv")
    if pyenv is not None:
        root = subprocess.run([pyenv, "root"], capture_output=True, text=True, check=False)
        versions = Path(root.stdout.strip()) / "versions"
        if root.returncode == 0 and versions.is_dir():
            found |= {str(path / "bin" / "python3") for path in versions.iterdir()
                      if re.fullmatch(r"\d+\.\d+\.\d+", path.name)}
    return sorted(path for path in found if path)


def _version_of(python: str) -> Version | None:
    """The interpreter's own (final-release CPython) version, or None if it cannot run."""
    ask = ("import platform, sys; print(platform.python_implementation(),"
           " sys.version_info.releaselevel, *sys.version_info[:3])")
    try:
        answer = subprocess.run([python, "-c", ask], capture_output=True, text=True,
                                timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    words = answer.stdout.split()
    if answer.returncode != 0 or words[:2] != ["CPython", "final"]:
        return None
    return tuple(int(n) for n in words[2:5])


def main() -> int:
    spec = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    usable = [(version, python) for python in candidates()
              if (version := _version_of(python)) is not None and admits(spec, version)]
    if not usable:
        print(f"newest_python: no installed CPython satisfies {spec!r}", file=sys.stderr)
        return 1
    print(max(usable)[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
