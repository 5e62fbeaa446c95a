"""Credentials inside base URLs: kept out of records, displays and library logs.

Gateways may take a user and password in the URL's userinfo
(``https://user:pass@gateway/v1``), which httpx sends as Basic auth, and some relays take
the key as the user alone (``http://KEY@relay/v1``). Like key values, userinfo of any
kind must never be written anywhere: records and displays show :func:`redact_url`, and
the provider hands the SDK a clean URL plus the header (:func:`split_credentials`), so
that libraries which log request URLs never see it either.
"""

from __future__ import annotations

import base64
import re
from urllib.parse import unquote, urlsplit, urlunsplit

__all__ = ["MASK", "origin", "redact_url", "split_credentials"]

MASK = "***"
_USERINFO = re.compile(r"^([^:/?#]*://)[^/?#]*@")


def _host(netloc: str) -> str:
    return netloc.rsplit("@", 1)[1] if "@" in netloc else netloc


def redact_url(url: str) -> str:
    """``url`` with any userinfo in it masked: ``http://***@host/v1`` (also when ``url``
    is not a valid URL, as in the message that refuses it)."""
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. "http://[::1": mask what looks like userinfo
        return _USERINFO.sub(rf"\1{MASK}@", url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=f"{MASK}@{_host(parts.netloc)}"))


def origin(url: str) -> str:
    """Where ``url`` sends requests: ``scheme://host:port``, without userinfo or path."""
    parts = urlsplit(url)
    try:
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    except ValueError:  # a port that is not a number: the text is all there is to compare
        return redact_url(url)
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{host}:{port}"


def split_credentials(url: str) -> tuple[str, dict[str, str], tuple[str, ...]]:
    """``(url without userinfo, the Basic auth header httpx would send, the user and
    password that were in it)``. With no userinfo: ``(url, {}, ())``."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, {}, ()
    user, password = unquote(parts.username or ""), unquote(parts.password or "")
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    clean = urlunsplit(parts._replace(netloc=_host(parts.netloc)))
    return clean, {"Authorization": f"Basic {token}"}, tuple(v for v in (user, password) if v)
