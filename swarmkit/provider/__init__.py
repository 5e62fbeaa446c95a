"""The model call: the only package that imports ``openai``.

``call`` sends one logical call with retries and error mapping; ``clients`` owns the
endpoints (base URL and key variable) and their SDK clients.
"""

from __future__ import annotations

from .clients import OPENAI_BASE_URL, PLACEHOLDER_KEY, Endpoint, EndpointClients
from .openaiprovider import OpenAIProvider

__all__ = [
    "OPENAI_BASE_URL",
    "PLACEHOLDER_KEY",
    "Endpoint",
    "EndpointClients",
    "OpenAIProvider",
]
