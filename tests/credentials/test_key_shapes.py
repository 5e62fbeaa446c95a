"""Credential-shaped text goes whatever its letters: the vendors' key shapes (OpenAI,
Anthropic, GitHub, AWS, Slack, Google, ...) and ``Bearer``/``api_key=`` forms without a
digit, while ordinary answers (prose, code, ids and hashes) come back unchanged. (A
streamed answer with key shapes in it: ``test_scrub.py``'s stream test.)"""

from __future__ import annotations

import pytest

from swarmkit.credentials.scrub import scrub

# The four the README walk found coming back unchanged.
WALK = [
    ("Authorization: Bearer abcdefghijklmnopqrstuvwxyzABCDEF", "Authorization: Bearer [redacted]"),
    ("call it with api_key=zzz123 today", "call it with api_key=[redacted] today"),
    ("my key is sk-proj-abcdefghijklmnop1234.", "my key is [redacted]."),
    ("token ghp_abcdefghijklmnopqrstuvwxyz0123456789 works", "token [redacted] works"),
]
# One made-up key of each well-known shape (none of them real).
SHAPES = [
    "sk-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7dEf0h",  # OpenAI, legacy
    "sk-proj-Qw3rTy6uIo9pAs2dFg5hJk8lZx1cVb4nMq7wEr0tYu3iOp6aSd9fGh2jKl5",  # OpenAI project
    "sk-svcacct-Zx9cVb6nMq3wEr0tYu7iOp4aSd1fGh8jKl5",  # OpenAI service account
    "sk-ant-api03-Lk9jHg6fDs3aPo0iUy7tRe4wQz1xCv8bNm5-Lk2jHg9fDs6aPo3iUy0tRe7wQz4xCv1b",
    "sk_live_4eC39HqLyjWDarjtT1zdp7dc",  # Stripe
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "gho_16C7e42F292c6912E7710c838347Ae178B4a",
    "github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789ab",
    "glpat-x9Vb2Nm4Qw6Er8Ty0Ui1O",  # GitLab
    "AKIAIOSFODNN7EXAMPLE",  # AWS (the documentation's example id)
    "xoxb-1234567890123-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",  # Slack bot
    "xoxp-1234567890-1234567890-1234567890-abcdef0123456789abcdef0123456789",
    "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
    "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",  # Google
    "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",  # Hugging Face
    "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",  # SendGrid
    "npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
]
# Normal answers: prose, code and the ids, hashes and names answers are full of.
ANSWERS = [
    "Bearer authentication sends a token in the Authorization header; basic auth sends a "
    "user and password. Use HTTPS for both.",
    'client = OpenAI(api_key=os.environ["OPENAI_API_KEY"])\n'
    'headers = {"Authorization": f"Bearer {token}"}',
    "Set api_key=YOUR_OPENAI_API_KEY_HERE in the config, or api_key: process.env.apiKey.",
    "Install scikit-learn (sklearn) and task-specific packages; the desk-based team asks "
    "for sk-learn tutorials.",
    "Commit 3f2a9c1e0b7d4f6a8c2e5b9d1f3a7c0e4b6d8f2a fixed it; see issue #1234 and run "
    "a3f9c2e1-7b4d-4e8f-9a2c-5d6e7f8a9b0c.",
    "Asia and Africa hold most of the world's population; Akia is a name, and so is Acca.",
    "The API returns a JSON token count; tokens are billed per million. Use the "
    "access_token field only over TLS.",
    "| model | input | output |\n|---|---|---|\n| gpt-4.1-mini | $0.40 | $1.60 |",
    "Vector databases differ in how they index embeddings: HNSW graphs, IVF lists or "
    "product quantisation, each trading recall for memory.",
]


@pytest.mark.parametrize(("text", "expected"), WALK)
def test_the_credentials_the_readme_walk_found_are_redacted(text: str, expected: str) -> None:
    assert scrub(text) == expected


@pytest.mark.parametrize("key", SHAPES)
def test_each_well_known_key_shape_is_redacted_whole(key: str) -> None:
    assert scrub(f"the key: {key} (keep it safe)") == "the key: [redacted] (keep it safe)"
    assert scrub(f'{{"key": "{key}"}}') == '{"key": "[redacted]"}'


@pytest.mark.parametrize("answer", ANSWERS)
def test_ordinary_answers_come_back_unchanged(answer: str) -> None:
    assert scrub(answer) == answer


def test_a_shape_inside_a_longer_word_is_left_alone() -> None:
    inside = "xAKIAIOSFODNN7EXAMPLEx and prefix-ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    assert scrub(inside) == inside
