"""calls: the request's fingerprint is worked out once and never outlives a change."""

from __future__ import annotations

from dataclasses import replace

from swarmkit.record.modelcall import ChatRequest

MESSAGES = ({"role": "user", "content": "Name three rivers"},)


def test_fingerprint_is_stable_and_ignores_stream() -> None:
    request = ChatRequest(model="m", messages=MESSAGES, max_tokens=64)
    first = request.fingerprint()
    assert request.fingerprint() == first
    assert ChatRequest(model="m", messages=MESSAGES, max_tokens=64, stream=True).fingerprint() \
        == first


def test_a_changed_copy_gets_its_own_fingerprint() -> None:
    request = ChatRequest(model="m", messages=MESSAGES)
    before = request.fingerprint()
    changed = replace(request, max_tokens=10)
    assert changed.fingerprint() != before
    assert replace(changed, max_tokens=None).fingerprint() == before
    assert changed != request and replace(changed, max_tokens=None) == request
