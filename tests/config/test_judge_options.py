"""The scoring options: ``judge``, ``rubric``, ``judge_base_url``, ``judge_api_key_env``
and ``repeat``, one row each in the option table, on every surface the row names; the
judge a role of its own that ``model=`` never turns on; a config summary with no trace
of them when they are unset (so an unscored run's files read as before); and each
repeat's own seed (``SwarmConfig.for_repeat``)."""

from __future__ import annotations

import pytest

from swarmkit.cli.command import _parser
from swarmkit.cli.runargs import run_options
from swarmkit.config.options import config_keys, markdown_table, option_named
from swarmkit.config.swarmconfig import JUDGE_MAX_TOKENS, SwarmConfig
from swarmkit.engine.budgetedcalls import build_request
from swarmkit.errors import ConfigError
from swarmkit.magics.flags import parse_line


def test_model_does_not_turn_the_judge_on() -> None:
    config = SwarmConfig().with_options(model="gpt-4.1-mini", base_url="http://127.0.0.1:9/v1")
    assert config.judge is None
    with pytest.raises(ConfigError, match="judge=MODEL"):
        config.role("judge")


def test_the_judge_takes_the_reducers_endpoint_and_key_unless_given_its_own() -> None:
    config = SwarmConfig().with_options(model="m", base_url="http://127.0.0.1:9/v1",
                                        api_key_env="MY_KEY", judge="judge-model")
    judge = config.role("judge")
    assert (judge.model, judge.base_url, judge.api_key_env) == (
        "judge-model", "http://127.0.0.1:9/v1", ("MY_KEY",))
    assert judge.max_tokens == JUDGE_MAX_TOKENS
    routed = config.with_options(judge_base_url="http://127.0.0.1:10/v1",
                                 judge_api_key_env="JUDGE_KEY,OTHER")
    judge = routed.role("judge")
    assert (judge.base_url, judge.api_key_env) == ("http://127.0.0.1:10/v1",
                                                   ("JUDGE_KEY", "OTHER"))
    assert routed.reducer.base_url == "http://127.0.0.1:9/v1"  # the swarm's roles unchanged


def test_an_unset_judge_leaves_no_trace_in_the_summary() -> None:
    summary = SwarmConfig().with_options(model="m").summary()
    for key in ("judge", "rubric", "judge_base_url", "judge_api_key_env", "repeat"):
        assert key not in summary


def test_a_judge_is_in_the_summary_as_a_role_and_round_trips() -> None:
    config = SwarmConfig().with_options(
        model="m", judge="judge-model", rubric="Is it right?", repeat=3,
        judge_base_url="http://user:secret-password-123@127.0.0.1:10/v1")
    summary = config.summary()
    assert summary["judge"]["model"] == "judge-model"
    assert "secret-password-123" not in str(summary)
    assert summary["rubric"] == "Is it right?" and summary["repeat"] == 3
    again = SwarmConfig.from_summary(summary)
    assert (again.judge, again.rubric, again.repeat) == ("judge-model", "Is it right?", 3)
    assert again.role("judge").api_key_env == config.role("judge").api_key_env


@pytest.mark.parametrize(("options", "message"), [
    ({"repeat": 0}, "repeat must be at least 1"),
    ({"repeat": 10**6}, "repeat must be at least 1 and at most 100"),
    ({"repeat": "two"}, "repeat must be a whole number"),
    ({"judge": "  "}, "non-empty"),
    ({"judge_base_url": "ftp://x"}, "judge_base_url must be an http"),
    ({"judge_api_key_env": ","}, "at least one variable"),
])
def test_a_bad_scoring_option_is_one_line(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        SwarmConfig().with_options(**options)
    assert "\n" not in str(caught.value)


def test_the_options_are_keys_flags_and_readme_rows() -> None:
    keys = config_keys()
    for name in ("judge", "rubric", "repeat", "judge_base_url", "judge_api_key_env"):
        assert name in keys
        assert option_named(name) is not None
        assert f"`{name}`" in markdown_table()
    args = parse_line("--judge gpt-4.1 --rubric 'Is it right?' --repeat 3", {})
    assert args.config_options == {"judge": "gpt-4.1", "rubric": "Is it right?",
                                   "repeat": "3"}
    cli = _parser().parse_args(["run", "a task", "--judge", "gpt-4.1", "--judge-base-url",
                                "http://127.0.0.1:10/v1", "--judge-api-key-env", "K"])
    options = run_options(cli)
    assert (options["judge"], options["judge_base_url"], options["judge_api_key_env"]) == (
        "gpt-4.1", "http://127.0.0.1:10/v1", "K")


def test_each_repeat_has_its_own_seed_and_repeat_zero_is_the_config_itself() -> None:
    config = SwarmConfig().with_options(model="m", repeat=3, worker_seed=40)
    assert config.for_repeat(0) is config
    second, third = config.for_repeat(1), config.for_repeat(2)
    assert (second.worker.seed, second.planner.seed, second.reducer.seed) == (41, 1, 1)
    assert (third.worker.seed, third.planner.seed) == (42, 2)
    assert second.worker.model == "m" and second.repeat == 3
    with pytest.raises(ConfigError, match="give 0 to 2"):
        config.for_repeat(3)


def test_a_repeat_is_a_distinct_request_and_the_same_repeat_the_same() -> None:
    config = SwarmConfig().with_options(model="m", repeat=2)
    messages = [{"role": "user", "content": "hi"}]
    first = build_request(config.for_repeat(0), "worker", messages).fingerprint()
    second = build_request(config.for_repeat(1), "worker", messages).fingerprint()
    again = build_request(config.for_repeat(1), "worker", messages).fingerprint()
    assert first != second == again
