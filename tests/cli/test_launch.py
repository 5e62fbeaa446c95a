"""``jswarm``'s entry point: a Ctrl-C while the command is still loading is a quiet 130."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_ctrl_c_while_the_command_loads_exits_130_without_a_traceback(tmp_path: Path) -> None:
    # A stand-in for the command's module whose import is interrupted by a real SIGINT.
    (tmp_path / "loading_slowly.py").write_text(
        "import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\ntime.sleep(30)\n")
    code = ("import sys\n"
            f"sys.path.insert(0, {str(tmp_path)!r})\n"
            "from swarmkit.cli import launch\n"
            "launch.COMMAND_MODULE = 'loading_slowly'\n"
            "sys.exit(launch.main([]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert done.returncode == 130, done.stderr
    assert done.stderr == "jswarm: interrupted while starting\n"


def test_the_entry_point_loads_only_itself_until_it_runs() -> None:
    code = ("import sys\nimport swarmkit.cli\n"
            "print(sorted(m for m in sys.modules if m.startswith('swarmkit')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, check=True)
    assert done.stdout.strip() == str(sorted(
        ["swarmkit", "swarmkit._imports", "swarmkit._version", "swarmkit.cli",
         "swarmkit.cli.exitcodes", "swarmkit.cli.launch"]))


def test_python_dash_m_swarmkit_is_the_command() -> None:
    done = subprocess.run([sys.executable, "-m", "swarmkit", "--help"], capture_output=True,
                          text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: jswarm")
