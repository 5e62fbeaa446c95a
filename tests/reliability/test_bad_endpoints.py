"""Base URLs that cannot be reached and key variables that are not set: one clear line.

A broken ``base_url`` (or ``planner_base_url``, ...) is a ``ConfigError`` naming the
option when the config is built: from Python, in ``%%swarm`` and ``%swarm config`` (a
one-line ``UsageError``) and in ``swarmkit run`` (one line, exit status 2). A key pool
with a name that is not set says so in one warning line; none set for a remote server
is an error before anything is sent.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

import swarmkit
from swarmkit.config.swarmconfig import RoleConfig, SwarmConfig
from swarmkit.errors import ConfigError
from swarmkit.testing import FakeServer
from tests.support.fakekey import KEY_ENV, Options, swarm_line

OneLine = Callable[[str], None]
TYPO_ENV = f"{KEY_ENV}_TYPO"
ROOT = Path(__file__).resolve().parents[2]
URL_KEY = "sk-in-the-url-0123456789abcdef"


@pytest.fixture(autouse=True)
def _typo_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TYPO_ENV, raising=False)

BAD_URLS = [
    ("http://[::1", "is not a valid URL (invalid IPv6 URL)"),
    ("http://[::1/v1", "is not a valid URL"),
    ("http://127.0.0.1:70000/v1", "is not a valid URL (port out of range 0-65535)"),
    ("http://127.0.0.1:0/v1", "has port 0"),
    ("http://127.0.0.1:port/v1", "is not a valid URL (port could not be cast"),
    ("ftp://127.0.0.1/v1", "must be an http:// or https:// URL"),
    ("127.0.0.1:8000/v1", "must be an http:// or https:// URL"),
    ("localhost", "must be an http:// or https:// URL"),
    ("http://", "has no valid host name"),
    ("http:///v1", "has no valid host name"),
    ("http://:8000/v1", "has no valid host name"),
    (f"http://{URL_KEY}@:8000/v1", "has no valid host name: 'http://***@:8000/v1'"),
    ("http://exa mple.org/v1", "has no valid host name"),
    ("   ", "must be a non-empty string"),
]
ROLE_OPTIONS = ["base_url", "planner_base_url", "worker_base_url", "reducer_base_url"]


@pytest.mark.parametrize("option", ROLE_OPTIONS)
@pytest.mark.parametrize(("url", "says"), BAD_URLS, ids=[u for u, _ in BAD_URLS])
def test_bad_base_url_is_a_config_error_naming_the_option(
    option: str, url: str, says: str, fresh: FakeServer, options: Options,
    one_line: OneLine,
) -> None:
    with pytest.raises(ConfigError) as error:
        swarmkit.run_sync("task", **options(fresh, **{option: url}))
    message = str(error.value)
    assert message.startswith(f"{option} ") and says in message
    assert URL_KEY not in message
    one_line(message)
    assert fresh.count() == 0


def test_bad_base_url_in_a_config_built_directly_names_the_role(
    fresh: FakeServer, options: Options
) -> None:
    config = SwarmConfig(reducer=RoleConfig(model="gpt-4.1-mini", base_url="http://[::1"))
    with pytest.raises(ConfigError, match=r"^reducer_base_url is not a valid URL"):
        swarmkit.run_sync("task", config=config, model="gpt-4.1-mini", api_key_env=KEY_ENV)
    assert fresh.count() == 0


@pytest.mark.parametrize(("url", "says"), BAD_URLS[:8], ids=[u for u, _ in BAD_URLS[:8]])
def test_bad_base_url_in_the_magic_is_a_one_line_usage_error(
    url: str, says: str, shell: InteractiveShell, fresh: FakeServer, one_line: OneLine
) -> None:
    line = f"--model gpt-4.1-mini --api-key-env {KEY_ENV} --base-url '{url}'"
    with pytest.raises(UsageError) as error:
        shell.run_cell_magic("swarm", line, "task")
    assert str(error.value).startswith("%%swarm: --base-url ") and says in str(error.value)
    one_line(str(error.value))
    with pytest.raises(UsageError) as config_error:
        shell.run_line_magic("swarm", f"config 'worker_base_url={url}'")
    assert str(config_error.value).startswith("%swarm config: worker_base_url ")
    assert says in str(config_error.value)
    one_line(str(config_error.value))
    assert fresh.count() == 0


@pytest.mark.parametrize(("flag", "url", "says"), [
    ("--base-url", "http://[::1", "ConfigError: --base-url is not a valid URL (invalid IPv6"),
    ("--base-url", "http://127.0.0.1:99999/v1", "ConfigError: --base-url is not a valid URL"),
    ("--planner-base-url", "ftp://127.0.0.1/v1", "ConfigError: --planner-base-url must be an"),
    ("--worker-base-url", "http://:8000/v1", "ConfigError: --worker-base-url has no valid host"),
])
def test_bad_base_url_in_swarmkit_run_is_one_line_and_exit_status_2(
    flag: str, url: str, says: str
) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-m", "swarmkit", "run", "task", "--model", "gpt-4.1-mini",
         "--api-key-env", KEY_ENV, flag, url],
        capture_output=True, text=True, timeout=120, env=env, check=False,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], done.stderr


def test_bad_openai_base_url_variable_is_a_config_error_naming_it(
    monkeypatch: pytest.MonkeyPatch, one_line: OneLine,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://[::1")
    with pytest.raises(ConfigError, match=r"^OPENAI_BASE_URL is not a valid URL") as error:
        swarmkit.run_sync("task", model="gpt-4.1-mini", api_key_env=KEY_ENV, history=False)
    one_line(str(error.value))


# -- key variables --------------------------------------------------------------------------


def test_unset_name_in_a_key_pool_is_one_warning_line_and_the_set_key_is_used(
    fresh: FakeServer, options: Options, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="swarmkit"):
        pool = f"{KEY_ENV},{TYPO_ENV}"
        run = swarmkit.run_sync("task", **options(fresh, api_key_env=pool))
    assert run.status == "completed"
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings == [f"swarmkit: api_key_env names {TYPO_ENV}, which is not set; calls "
                        f"use only {KEY_ENV}"]
    keys = {r.headers.get("authorization") for r in fresh.requests}
    assert keys == {f"Bearer {os.environ[KEY_ENV]}"}


def test_unset_name_in_a_key_pool_warns_in_the_magic_too(
    shell: InteractiveShell, fresh: FakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    line = swarm_line(fresh, "--quiet --out pooled", key_env=f"{TYPO_ENV},{KEY_ENV}")
    with caplog.at_level(logging.WARNING, logger="swarmkit"):
        shell.run_cell_magic("swarm", line, "task")
    assert shell.user_ns["pooled"].status == "completed"
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and TYPO_ENV in warnings[0] and "not set" in warnings[0]


@pytest.mark.parametrize("names", ["SWARMKIT_NOPE_A,SWARMKIT_NOPE_B", "SWARMKIT_NOPE_A"])
def test_no_key_set_for_a_remote_endpoint_is_a_config_error_before_any_request(
    names: str, caplog: pytest.LogCaptureFixture, one_line: OneLine
) -> None:
    # example.invalid never resolves: the error must come before any connection.
    with pytest.raises(ConfigError) as error:
        swarmkit.run_sync("task", model="gpt-4.1-mini", base_url="https://example.invalid/v1",
                          api_key_env=names, history=False)
    message = str(error.value)
    assert message.startswith(f"api_key_env names {names.replace(',', ', ')}, but ")
    assert "drop api_key_env if example.invalid needs no key" in message
    one_line(message)


def test_no_key_set_for_a_remote_endpoint_in_the_magic_isone_line(
    shell: InteractiveShell, one_line: OneLine,
) -> None:
    line = swarm_line("https://example.invalid/v1", key_env="SWARMKIT_NOPE_A,SWARMKIT_NOPE_B")
    with pytest.raises(UsageError) as error:
        shell.run_cell_magic("swarm", line, "task")
    assert "api_key_env names SWARMKIT_NOPE_A, SWARMKIT_NOPE_B, but none of them is set" in (
        str(error.value))
    one_line(str(error.value))


def test_no_key_set_for_a_server_on_this_machine_still_runs_with_the_placeholder(
    fresh: FakeServer, options: Options,
) -> None:
    # Local servers (llama.cpp, Ollama, FakeServer) ignore the key.
    run = swarmkit.run_sync("task", **options(fresh, api_key_env="SWARMKIT_NOPE_A"))
    assert run.status == "completed"
    assert {r.headers.get("authorization") for r in fresh.requests} == {
        "Bearer swarmkit-no-key"}
