"""``python binder/link.py`` prints the Binder link of the GitHub repository a checkout
came from (the README has no ``OWNER`` placeholder link that opens nothing)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINK = ROOT / "binder" / "link.py"


def _module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("binder_link", LINK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("remote", [
    "https://github.com/alice/swarmkit-fork.git", "https://github.com/alice/swarmkit-fork",
    "git@github.com:alice/swarmkit-fork.git", "ssh://git@github.com/alice/swarmkit-fork.git",
    "https://token@github.com/alice/swarmkit-fork.git/",
])
def test_each_form_of_a_github_remote_gives_its_binder_link(remote: str) -> None:
    assert _module().binder_url(remote) == (
        "https://mybinder.org/v2/gh/alice/swarmkit-fork/HEAD?labpath="
        "notebooks%2F01-quickstart.ipynb")


def test_a_remote_that_is_not_github_is_refused_in_one_line() -> None:
    with pytest.raises(ValueError, match=r"is not a github\.com repository URL"):
        _module().binder_url("https://gitlab.com/alice/swarmkit.git")


def test_the_script_prints_the_link_and_badge_of_the_checkouts_origin(tmp_path: Path) -> None:
    copy = tmp_path / "fork"
    (copy / "binder").mkdir(parents=True)
    (copy / "binder" / "link.py").write_text(LINK.read_text())
    git = ["git", "-C", str(copy)]
    subprocess.run([*git, "init", "-q"], check=True)
    missing = subprocess.run([sys.executable, str(copy / "binder" / "link.py")],
                             capture_output=True, text=True, check=False)
    assert missing.returncode == 2 and "has no git remote 'origin'" in missing.stderr
    subprocess.run([*git, "remote", "add", "origin", "git@github.com:bob/swarm.git"],
                   check=True)
    done = subprocess.run([sys.executable, str(copy / "binder" / "link.py")],
                          capture_output=True, text=True, check=False)
    url = "https://mybinder.org/v2/gh/bob/swarm/HEAD?labpath=notebooks%2F01-quickstart.ipynb"
    assert done.returncode == 0
    assert done.stdout == f"{url}\n[![Binder](https://mybinder.org/badge_logo.svg)]({url})\n"


def test_the_readme_names_no_placeholder_owner() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "/gh/OWNER/" not in readme and "python binder/link.py" in readme
