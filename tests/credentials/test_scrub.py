"""``swarmkit.credentials.scrub``: credential forms go, prose and code stay, and a streamed
answer split
anywhere adds up to the whole answer scrubbed."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swarmkit.credentials.scrub import StreamScrubber, remember_secrets, scrub, scrub_reply
from swarmkit.record.modelcall import ChatResponse
from swarmkit.record.usage import Usage

KEY = "sk-scrub-test-5f0c2a9e71d4b3"
remember_secrets([KEY])
BASIC = base64.b64encode(f"team:{KEY}".encode()).decode()


@pytest.mark.parametrize(("text", "expected"), [
    (f"Incorrect API key provided: {KEY}.", "Incorrect API key provided: [redacted]."),
    ("Authorization: Bearer tok9f8e7d6c5b4a", "Authorization: Bearer [redacted]"),
    (f"Authorization: Basic {BASIC}", "Authorization: Basic [redacted]"),
    ("x-api-key: 9f8e7d6c5b4a3210", "x-api-key: [redacted]"),
    ('{"api_key": "ab12cd34ef56"}', '{"api_key": "[redacted]"}'),
    ("see http://me:pw@gw.example/v1", "see http://***@gw.example/v1"),
    (f"http://{KEY}@relay/v1", "http://***@relay/v1"),
    ("AUTHORIZATION: BEARER TOK9F8E7D6C5B4A", "AUTHORIZATION: BEARER [redacted]"),
    ("access_token=ab12cd34ef56gh", "access_token=[redacted]"),
    ("Auth-Token: ab12cd34ef56gh", "Auth-Token: [redacted]"),
    ("X-Goog-Api-Key: 9f8e7d6c5b4a3210", "X-Goog-Api-Key: [redacted]"),
])
def test_credential_forms_are_redacted(text: str, expected: str) -> None:
    assert scrub(text) == expected


@pytest.mark.parametrize("text", [
    "Bearer authentication and a basic understanding of Basic auth",
    'api_key = os.environ["OPENAI_API_KEY"]',
    'headers = {"Authorization": f"Bearer {api_key}"}',
    "api_key_env=OPENAI_API_KEY and --api-key-env VAR",
    "http://[::1]:8000/v1 and https://api.openai.com/v1",
])
def test_prose_and_code_are_left_alone(text: str) -> None:
    assert scrub(text) == text


PARTS = [KEY, " ", "Bearer ", "Basic ", BASIC, "api-key: ", "tok3n12345678", "http://",
         "user:pw@", "host/v1", "word", "\n", '"', "=", KEY[:6],
         # key shapes, and forms whose token has no digit
         "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "AKIAIOSFODNN7EXAMPLE", "sk-", "ghp_",
         "abcdefghijklmnopqrstuvwxyzABCDEF", "api_key=", "zzz123"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PARTS), max_size=25), st.lists(st.integers(1, 15),
                                                                min_size=1, max_size=40))
def test_a_stream_split_anywhere_shows_the_whole_text_scrubbed(
    parts: list[str], sizes: list[int]
) -> None:
    text = "".join(parts)
    shown = streamed(text, sizes)
    assert shown == scrub(text)
    assert all(KEY[j:j + 8] not in shown for j in range(len(KEY) - 7))


def streamed(text: str, sizes: list[int]) -> str:
    """What a StreamScrubber passes on of ``text`` fed in pieces of ``sizes`` (cycled)."""
    scrubber, shown, i = StreamScrubber(), list[str](), 0
    while i < len(text):
        size = sizes[len(shown) % len(sizes)]
        shown.append(scrubber.feed(text[i:i + size]))
        i += size
    shown.append(scrubber.flush())
    return "".join(shown)


def test_a_value_known_only_to_the_caller_is_redacted_too() -> None:
    other = "only-this-caller-7a1b2c3d"  # no vendor's shape: only its value gives it away
    assert scrub(f"echo {other} and {KEY}", [other, KEY]) == "echo [redacted] and [redacted]"
    assert scrub(f"echo {other}") == f"echo {other}"  # not remembered process-wide


def test_a_reply_with_nothing_to_scrub_is_kept_and_one_with_a_key_is_not() -> None:
    clean = ChatResponse("Row 1 is about capital cities.", Usage(3, 4, 0, 0, 1))
    assert scrub_reply(clean) is clean
    leaky = ChatResponse(f"my key is {KEY}", Usage(3, 4, 0, 0, 1), finish_reason="stop")
    scrubbed = scrub_reply(leaky)
    assert scrubbed.content == "my key is [redacted]"
    assert (scrubbed.usage, scrubbed.finish_reason) == (leaky.usage, "stop")
