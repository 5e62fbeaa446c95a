"""The well-known shapes of API keys and tokens, as one regular expression.

A key whose value swarmkit never read (one a tool prints, a model repeats, a server's
error quotes) is still recognisable by its shape: vendors give their keys fixed
prefixes precisely so that scanners can find them. :data:`KEY_SHAPES` matches the
shapes below, each a whole token (not inside a longer word), and ``scrub`` replaces
every match.

Why a compiled expression and not a kept rule set. detect-secrets (Yelp) is the usual
one, and its plugins were tried first: scanning a reply line by line with its default
plugins costs two orders of magnitude more CPU than this scrub, and more than the call
itself costs the client, on the path every reply takes (``benchmarks/scrub.py``
measures it where it is installed; figures in benchmarks/README.md); its entropy
plugins flag ordinary hashes and ids in answers; it reports values, not where they are,
so they could not be cut out of streamed text; and it knows neither OpenAI's project
keys (``sk-proj-``) nor Anthropic's, Google's or GitHub's fine-grained ones. The shapes
below take its rules where it has them (GitHub, AWS, Slack, Stripe, GitLab, SendGrid,
PyPI, npm, JWT: detect-secrets 1.5, its ``plugins/``) and add the vendors' documented
prefixes it lacks, in one expression scanned once per reply.

To add a vendor: one branch, starting with its literal prefix, long enough that no word
or identifier of prose or code has that shape (a test checks some normal answers).
"""

from __future__ import annotations

import re

__all__ = ["KEY_SHAPES"]

# name -> the expression of one vendor's keys (without the token boundaries).
_SHAPES: dict[str, str] = {
    # OpenAI (sk-..., sk-proj-..., sk-svcacct-...) and Anthropic (sk-ant-api03-...): at
    # least 20 key characters after "sk-", one of them a digit (random keys have many;
    # a long hyphenated word has none).
    "openai-anthropic": r"sk-(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]{20,}",
    # Stripe secret and restricted keys.
    "stripe": r"[rs]k_(?:live|test)_[0-9A-Za-z]{16,}",
    # GitHub: classic personal, OAuth, user-to-server, server-to-server and refresh
    # tokens, and fine-grained personal access tokens.
    "github": r"gh[pousr]_[A-Za-z0-9_]{30,}|github_pat_[A-Za-z0-9_]{22,}",
    # GitLab personal, deploy, feed, runner and other tokens.
    "gitlab": r"gl(?:pat|dt|ft|soat|rt|cbt|imt|ptt)-[A-Za-z0-9_-]{20,}",
    # AWS access key ids.
    "aws": r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}",
    # Slack bot, user, app and refresh tokens, and incoming webhooks.
    "slack": r"xox[abposre]-[A-Za-z0-9-]{10,}|xapp-[A-Za-z0-9-]{10,}"
             r"|https://hooks\.slack\.com/services/[A-Za-z0-9_/]{20,}",
    # Google API keys.
    "google": r"AIza[0-9A-Za-z_-]{35}",
    # Hugging Face user access tokens.
    "huggingface": r"hf_[A-Za-z0-9]{30,}",
    # SendGrid, PyPI and npm tokens.
    "sendgrid": r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}",
    "pypi": r"pypi-AgE[A-Za-z0-9_-]{50,}",
    "npm": r"npm_[A-Za-z0-9]{36}",
    # JSON Web Tokens (a header and a payload, both JSON objects, so both start "eyJ").
    "jwt": r"eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*",
}

# A whole token: not the tail or the head of a longer run of key characters.
KEY_SHAPES: re.Pattern[str] = re.compile(
    r"(?<![A-Za-z0-9_-])(?:" + "|".join(_SHAPES.values()) + r")(?![A-Za-z0-9_-])")
