"""Checks that come first and name what the user typed: ``jswarm demo --out`` before the
demo runs, a ``SWARMKIT_*`` variable by its name, ``--schema-file`` by the file, and a
budgeted model with no price gets a fix a terminal has (``--price MODEL IN OUT``)."""

from __future__ import annotations

from pathlib import Path

import pytest

import swarmkit
from swarmkit.config import SwarmConfig
from swarmkit.errors import ConfigError
from swarmkit.testing import FakeServer
from tests.cli.test_cli import swarmkit_cli
from tests.support.fakekey import KEY_ENV


def test_demo_refuses_an_out_path_that_is_no_notebook_before_it_runs(tmp_path: Path) -> None:
    done = swarmkit_cli("demo", "--out", "mydemo", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "jswarm: ConfigError: demo: --out must be a .ipynb path, not 'mydemo' (e.g. --out "
        "mydemo.ipynb)"]  # and nothing else: the embedded model never started
    missing = swarmkit_cli("demo", "--out", "no/such/folder/demo.ipynb", cwd=tmp_path)
    assert missing.returncode == 2
    assert missing.stderr.splitlines() == [
        "jswarm: ConfigError: demo: --out no/such/folder/demo.ipynb: there is no folder "
        "'no/such/folder'; create it first"]
    assert list(tmp_path.iterdir()) == []


def test_a_bad_swarmkit_variable_is_named_in_its_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env = {"SWARMKIT_WORKERS": "abc", "SWARMKIT_CONCURRENCY": "2"}
    with pytest.raises(ConfigError) as caught:
        SwarmConfig.from_env(env)
    assert str(caught.value) == ("$SWARMKIT_WORKERS: workers must be a whole number, got "
                                 "'abc'; fix the variable or unset it")
    monkeypatch.setenv("SWARMKIT_BUDGET", "lots")
    done = swarmkit_cli("run", "task", "--model", "gpt-4.1-mini")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "jswarm: ConfigError: $SWARMKIT_BUDGET: budget must be a USD amount like 0.50, got "
        "'lots'; fix the variable or unset it"]


def test_a_bad_schema_file_is_named_by_its_path(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text('{"type": "objekt"}')
    (tmp_path / "junk.json").write_text("not json")
    bad = swarmkit_cli("run", "task", "--model", "gpt-4.1-mini", "--schema-file", "bad.json",
                       cwd=tmp_path)
    junk = swarmkit_cli("run", "task", "--model", "gpt-4.1-mini", "--schema-file",
                        "junk.json", cwd=tmp_path)
    assert bad.returncode == junk.returncode == 2
    assert bad.stderr.startswith("jswarm: ConfigError: --schema-file bad.json is not a valid "
                                 "JSON schema: 'objekt' is not valid")
    assert junk.stderr.startswith("jswarm: ConfigError: --schema-file junk.json is not JSON "
                                  "(Expecting value")
    assert len(bad.stderr.splitlines()) == len(junk.stderr.splitlines()) == 1


def test_a_budget_on_an_unpriced_model_says_to_pass_price_and_price_works() -> None:
    with FakeServer(plan_tasks=2) as server:
        args = ["run", "task", "--model", "my-own-model", "--base-url", server.base_url,
                "--api-key-env", KEY_ENV, "--budget", "1"]
        refused = swarmkit_cli(*args)
        assert server.count() == 0
        priced = swarmkit_cli(*args, "--price", "my-own-model", "0.5", "1.5", "--json")
        bad = swarmkit_cli(*args, "--price", "my-own-model", "cheap", "1.5")
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [
        "jswarm: ConfigError: no price known for model 'my-own-model', so a budget cannot be "
        "enforced; add one with --price my-own-model IN OUT (USD per 1M tokens)"]
    assert priced.returncode == 0, priced.stderr
    run = swarmkit.Run.from_json(priced.stdout)
    assert run.status == "completed" and run.cost_usd is not None and run.cost_usd > 0
    assert bad.returncode == 2 and bad.stderr.startswith(
        "jswarm: ConfigError: --price: input price of my-own-model must be")

