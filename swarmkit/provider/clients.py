"""Where calls go: one endpoint per base URL and key variable, with its SDK clients.

Keys are read from the environment by variable name at call time; the values are kept
only in memory (``secrets``, and ``swarmkit.credentials.scrub``'s process-wide set, so that text
from servers can be scrubbed) and never recorded.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import logging
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..config.swarmconfig import DEFAULT_KEY_ENV, RoleConfig, SwarmConfig
from ..config.urls import split_credentials
from ..config.validation import check_base_url
from ..credentials.endpoints import OPENAI_BASE_URL, remember_endpoint
from ..credentials.scrub import MIN_SECRET_CHARS, remember_secrets
from ..credentials.secrets import secret_values
from ..errors import ConfigError

__all__ = ["OPENAI_BASE_URL", "PLACEHOLDER_KEY", "Endpoint", "EndpointClients"]

log = logging.getLogger("swarmkit")

# Local servers (llama.cpp, Ollama, vLLM) ignore the key, but the SDK insists on one.
PLACEHOLDER_KEY = "swarmkit-no-key"


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where one call goes: the base URL, the key variable's name, and the key."""

    base_url: str
    key_env: str
    key: str

    @property
    def host(self) -> str:
        parts = urlsplit(self.base_url)
        host = parts.hostname or self.base_url
        return f"{host}:{parts.port}" if parts.port else host


class EndpointClients:
    """Endpoints and their clients for one provider; closed together by ``aclose``."""

    def __init__(self, config: SwarmConfig, env: Mapping[str, str] | None = None) -> None:
        self.config = config
        self._env = os.environ if env is None else env
        self._clients: dict[tuple[str, str], Any] = {}  # per base URL and key variable
        self.secrets: set[str] = set(secret_values(config, self._env).values())
        self._warned: set[tuple[str, ...]] = set()  # api_key_env tuples warned about

    def key_envs(self, role: RoleConfig) -> tuple[str, ...]:
        """The variables whose keys this role may use: every one of its names that is set.

        With several, each attempt goes to the least-loaded key
        (see ``swarmkit.provider.ratelimits``).
        Names that are not set (often a typo) are logged once as a warning: the run goes
        on with fewer keys than asked for.
        """
        names = role.keys_set(self._env)
        if names and len(names) < len(role.api_key_env) and role.api_key_env not in self._warned:
            self._warned.add(role.api_key_env)
            unset = [name for name in role.api_key_env if name not in names]
            log.warning(
                "swarmkit: api_key_env names %s, which %s not set; calls use only %s",
                ", ".join(unset), "is" if len(unset) == 1 else "are", ", ".join(names),
            )
        return names

    def endpoint(self, role: RoleConfig, key_env: str | None = None) -> Endpoint:
        """Where ``role`` sends its calls (with ``key_env``'s key, default: the first set);
        a ConfigError when its key is missing."""
        names = self.key_envs(role)
        name = key_env if key_env in names else next(iter(names), None)
        base_url = role.base_url or OPENAI_BASE_URL
        if role.base_url is None and self._env.get("OPENAI_BASE_URL"):
            base_url = check_base_url("OPENAI_BASE_URL", self._env["OPENAI_BASE_URL"])
        if name is not None:
            key = self._env[name]
            if len(key.strip()) >= MIN_SECRET_CHARS:
                # Shorter values are placeholders ("x", "ollama"): scrubbing them would
                # mangle every message that happens to contain those letters.
                self.secrets.add(key.strip())
                remember_secrets([key])
            return Endpoint(base_url, name, key)
        if role.base_url is None:
            names_text = " or ".join(role.api_key_env) or "OPENAI_API_KEY"
            raise ConfigError(
                f"{names_text} is not set; export it or pass api_key_env=/--api-key-env "
                "naming the variable that holds your key"
            )
        if role.api_key_env not in ((), (DEFAULT_KEY_ENV,)) and not _on_this_machine(base_url):
            # Variables were named for a remote server and none holds a key: a typo or a
            # missing export. (A local server ignores keys; so may a remote one reached
            # with no api_key_env at all, which gets the placeholder as before.)
            names_text = ", ".join(role.api_key_env)
            which = "it is not" if len(role.api_key_env) == 1 else "none of them is"
            raise ConfigError(
                f"api_key_env names {names_text}, but {which} set; export the key, or drop "
                f"api_key_env if {_host(base_url)} needs no key"
            )
        first = role.api_key_env[0] if role.api_key_env else ""
        return Endpoint(base_url, first, PLACEHOLDER_KEY)

    async def client(self, endpoint: Endpoint) -> Any:
        """The SDK client for ``endpoint``, made on its first call."""
        client = self._clients.get((endpoint.base_url, endpoint.key_env))
        if client is None:
            import openai

            tls = _plain_http_tls(endpoint.base_url) or await asyncio.to_thread(_tls_context)
            base_url, userinfo_auth, userinfo = split_credentials(endpoint.base_url)
            found = [v for v in userinfo if len(v) >= MIN_SECRET_CHARS]
            self.secrets.update(found)
            remember_secrets(found)
            remember_endpoint(endpoint.base_url, endpoint.key_env)
            client = self._clients.setdefault(
                (endpoint.base_url, endpoint.key_env),
                openai.AsyncOpenAI(
                    api_key=endpoint.key,
                    base_url=base_url,
                    default_headers=userinfo_auth or None,
                    max_retries=0,
                    timeout=self.config.call_timeout,
                    # The SDK's aiohttp transport (openai[aiohttp]): with many calls in
                    # flight it takes less client CPU per call than the default httpx2
                    # pool (benchmarks/README.md), and that CPU is on every wave's
                    # critical path.
                    http_client=openai.DefaultAioHttpClient(verify=tls),
                ),
            )
        return client

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.close()


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One verifying TLS context per process, shared by every client.

    Each new client would otherwise load the CA bundle again, and there is a
    new client per endpoint for every run.
    """
    import httpx2

    return httpx2.create_ssl_context()


def _host(base_url: str) -> str:
    return urlsplit(base_url).hostname or base_url


def _on_this_machine(base_url: str) -> bool:
    """Whether ``base_url`` names a loopback host (a local llama.cpp, Ollama, FakeServer)."""
    host = _host(base_url).lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified  # 0.0.0.0 reaches this machine


def _plain_http_tls(base_url: str) -> ssl.SSLContext | None:
    """For an ``http://`` endpoint reached without a proxy: a context that trusts nothing.

    Such an endpoint (a local server) never does TLS, so loading the CA bundle is wasted
    time on the first call. The context still demands a verified certificate, so a
    redirect to ``https://`` fails instead of being trusted blindly.
    """
    from urllib.request import getproxies

    if urlsplit(base_url).scheme != "http" or getproxies():
        return None
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
