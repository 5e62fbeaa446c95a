"""The fake server's answers that are not completions: JSON errors, fault bodies, aborts."""

from __future__ import annotations

import json

from aiohttp import web

from .faults import Fault, seconds_text

__all__ = ["abort", "fault_response", "json_error"]

_GARBLED = b'{"id": "chatcmpl-garbled", "choices": [{"index": 0, "message": {"conte\x00\xff'


def json_error(status: int, message: str, kind: str = "invalid_request_error") -> web.Response:
    body = {"error": {"message": message, "type": kind, "code": status}}
    return web.json_response(body, status=status)


def abort(request: web.Request) -> web.StreamResponse:
    """Drop the connection with no answer (what a crashed proxy does)."""
    if request.transport is not None:
        request.transport.abort()
    # The handler must still return something; aiohttp drops it on a closed transport.
    return web.Response(status=499)


def fault_response(fault: Fault, *, stream: bool) -> web.Response:
    """The answer for a malformed, HTML or status fault."""
    if fault.kind == "malformed":
        if stream:
            return web.Response(
                body=b"data: {not json at all\n\ndata: [DONE]\n\n",
                content_type="text/event-stream",
            )
        return web.Response(body=_GARBLED, content_type="application/json")
    if fault.kind == "stream_error":  # asked without streaming: a plain server error
        return json_error(fault.http_status, fault.body or "server error", "server_error")
    if fault.kind == "html":
        response = web.Response(
            text=fault.html_page(), status=fault.http_status, content_type="text/html"
        )
        response.headers.extend(fault.headers)
        return response
    body = fault.error_body()
    try:
        json.loads(body)
        content_type = "application/json"
    except ValueError:
        content_type = "text/plain"
    response = web.Response(text=body, status=fault.http_status, content_type=content_type)
    if fault.retry_after is not None:
        value = fault.retry_after
        response.headers["Retry-After"] = value if isinstance(value, str) else seconds_text(value)
    response.headers.extend(fault.headers)
    return response
