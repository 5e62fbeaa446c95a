"""Credentials inside base URLs: kept out of records, displays and library logs.

Gateways may take a user and password in the URL's userinfo
(``https://user:pass@gateway/v1``), which httpx sends as Basic auth. Like key values,
the password must never be written anywhere: records show :func:`redact_url`, and the
provider hands the SDK a clean URL plus the header (:func:`split_credentials`), so that
libraries which log request URLs never see the password either.
"""

from __future__ import annotations

import base64
from urllib.parse import unquote, urlsplit, urlunsplit

__all__ = ["redact_url", "split_credentials"]


def _host(netloc: str) -> str:
    return netloc.rsplit("@", 1)[1] if "@" in netloc else netloc


def redact_url(url: str) -> str:
    """``url`` with any password in it masked: ``http://user:***@host/v1``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{_host(parts.netloc)}"))


def split_credentials(url: str) -> tuple[str, dict[str, str], str | None]:
    """``(url without userinfo, the Basic auth header httpx would send, the password)``.

    With no userinfo: ``(url, {}, None)``.
    """
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, {}, None
    user, password = unquote(parts.username or ""), unquote(parts.password or "")
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    clean = urlunsplit(parts._replace(netloc=_host(parts.netloc)))
    return clean, {"Authorization": f"Basic {token}"}, password or None
