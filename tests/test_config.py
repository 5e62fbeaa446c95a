"""SwarmConfig: public option names, per-role overrides, coercion and one-line errors."""

from __future__ import annotations

from decimal import Decimal

import pytest

from swarmkit.config.swarm import AUTO_MODEL, SwarmConfig
from swarmkit.errors import ConfigError


def test_defaults_are_auto_and_valid() -> None:
    config = SwarmConfig()
    assert config.models == {"planner": AUTO_MODEL, "worker": AUTO_MODEL, "reducer": AUTO_MODEL}
    config.validate()


def test_shared_options_apply_to_every_role_and_per_role_ones_win() -> None:
    config = SwarmConfig().with_options(
        model="gpt-4.1-mini", reducer_model="claude-sonnet-4.5", max_tokens="256",
        planner_max_tokens=100, api_key_env="A, B", workers="12", budget="$0.50",
    )
    assert config.models == {
        "planner": "gpt-4.1-mini", "worker": "gpt-4.1-mini", "reducer": "claude-sonnet-4.5",
    }
    assert config.planner.max_tokens == 100 and config.worker.max_tokens == 256
    assert config.worker.api_key_env == ("A", "B")
    assert config.max_workers == 12 and config.budget_usd == Decimal("0.50")


def test_environment_sits_between_defaults_and_options() -> None:
    env = {"SWARMKIT_MODEL": "gpt-4o-mini", "SWARMKIT_CONCURRENCY": "7"}
    config = SwarmConfig.from_options(env=env, concurrency=3)
    assert config.worker.model == "gpt-4o-mini" and config.concurrency == 3


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"workers": 0}, "workers must be at least 1"),
        ({"workers": "many"}, "whole number"),
        ({"workers": 2.5}, "whole number"),
        ({"concurrency": True}, "whole number"),
        ({"budget": "lots"}, "USD amount"),
        ({"budget": -1}, "positive"),
        ({"temperature": 7}, "between 0 and 2"),
        ({"max_tokens": 0}, "at least 1"),
        ({"api_key_env": " , "}, "at least one variable"),
        ({"wrokers": 3}, "unknown option 'wrokers'"),
        ({"record": "a.json", "replay": "b.json"}, "either record or replay"),
    ],
)
def test_bad_values_are_one_line_config_errors(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        SwarmConfig().with_options(**options)
    assert "\n" not in str(info.value)


def test_summary_round_trips_and_holds_only_key_names() -> None:
    config = SwarmConfig().with_options(model="gpt-4.1", api_key_env="MY_KEY", budget="1.5")
    summary = config.summary()
    assert summary["worker"]["api_key_env"] == ["MY_KEY"]
    assert SwarmConfig.from_summary(summary) == config
