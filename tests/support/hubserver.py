"""A loopback stand-in for the Hugging Face Hub's file endpoint, for ``local:hf:`` tests.

``huggingface_hub.hf_hub_download`` asks two things of ``HF_ENDPOINT`` (read from its
``file_download`` module): ``HEAD /{repo}/resolve/{revision}/{file}``, whose
``X-Repo-Commit`` (the commit), ``ETag`` and ``Content-Length`` headers it requires, then
``GET`` of the same path for the bytes. A file the server does not hold is a 404 with
``X-Error-Code: EntryNotFound``, as the Hub answers. Every request is kept, so a test can
see that a cached file is not asked for again. It listens on 127.0.0.1 only and stops
when its ``with`` block ends.
"""

from __future__ import annotations

import hashlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType

__all__ = ["HubServer"]

_COMMIT = "0123456789abcdef0123456789abcdef01234567"


class HubServer:
    """Serves ``files`` ({"owner/repo/path/in/repo.gguf": file on disk}) as the Hub does."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.files = files
        self.requests: list[tuple[str, str]] = []  # (method, path)
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def do_HEAD(self) -> None:
                hub._answer(self, body=False)

            def do_GET(self) -> None:
                hub._answer(self, body=True)

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def file_requests(self) -> list[tuple[str, str]]:
        """The requests for a file (HEAD or GET of ``/{repo}/resolve/...``); the client
        also asks for other things (its agent registry, ``/api/agent-harnesses``)."""
        return [(method, path) for method, path in self.requests if "/resolve/" in path]

    def downloads(self) -> int:
        """How many times a file's bytes were asked for (GETs)."""
        return sum(1 for method, _ in self.file_requests() if method == "GET")

    def _answer(self, handler: BaseHTTPRequestHandler, *, body: bool) -> None:
        self.requests.append((handler.command, handler.path))
        owner, repo, resolve, _revision, *rest = handler.path.lstrip("/").split("/") + [""] * 4
        source = self.files.get("/".join([owner, repo, *[p for p in rest if p]]))
        if resolve != "resolve" or source is None:
            handler.send_response(404)
            handler.send_header("X-Error-Code", "EntryNotFound")
            handler.send_header("X-Repo-Commit", _COMMIT)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        data = source.read_bytes()
        handler.send_response(200)
        handler.send_header("X-Repo-Commit", _COMMIT)
        handler.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        if body:
            handler.wfile.write(data)

    def __enter__(self) -> HubServer:
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
