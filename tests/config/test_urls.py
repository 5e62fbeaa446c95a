"""Credentials in base URLs: masked for records, moved to a header for the SDK."""

from __future__ import annotations

import base64

from swarmkit.config.urls import redact_url, split_credentials


def test_a_url_without_userinfo_is_left_alone() -> None:
    url = "https://api.example.com:8443/v1"
    assert redact_url(url) == url
    assert split_credentials(url) == (url, {}, ())


def test_userinfo_of_any_kind_is_masked() -> None:
    """A relay may take the key as the user alone (``http://KEY@host/v1``)."""
    assert redact_url("https://me:s3cret@gw.example.com/v1") == "https://***@gw.example.com/v1"
    assert redact_url("https://:s3cret@gw.example.com/v1") == "https://***@gw.example.com/v1"
    assert redact_url("https://sk-key123@gw.example.com/v1") == "https://***@gw.example.com/v1"
    assert redact_url("http://[::1]:8000/v1") == "http://[::1]:8000/v1"


def test_userinfo_becomes_the_basic_auth_header_httpx_would_send() -> None:
    url, headers, userinfo = split_credentials("http://me:p%40ss%3Aword@127.0.0.1:9/v1")
    assert url == "http://127.0.0.1:9/v1" and userinfo == ("me", "p@ss:word")
    assert headers == {"Authorization": "Basic " + base64.b64encode(b"me:p@ss:word").decode()}
    url, headers, userinfo = split_credentials("http://me@127.0.0.1:9/v1")
    assert url == "http://127.0.0.1:9/v1" and userinfo == ("me",)
    assert headers == {"Authorization": "Basic " + base64.b64encode(b"me:").decode()}
