"""A stored run's judge is trusted no more than its other roles: ``stored_config`` (what
``%swarm rerun`` and ``%swarm resume`` run) refuses a judge endpoint or key variable the
session has not used, and a named ``base_url`` routes the judge too."""

from __future__ import annotations

import pytest

from swarmkit.config.swarmconfig import SwarmConfig
from swarmkit.errors import StoreError
from swarmkit.record.runrecord import RunRecord
from swarmkit.store.rerun import rerun_endpoints, stored_config

HOME = "http://127.0.0.1:7/v1"  # never connected to: nothing here sends a request
STRANGER = "http://127.0.0.1:8/v1"


def _stored(**judge: object) -> RunRecord:
    config = SwarmConfig().with_options(model="m", base_url=HOME, api_key_env="HOME_KEY",
                                        judge="judge-model", rubric="Right?")
    summary = config.summary()
    summary["judge"].update(judge)
    return RunRecord("r1", "a task", config=summary, status="completed", plan=["a"])


TRUSTED = SwarmConfig().with_options(model="m", base_url=HOME, api_key_env="HOME_KEY")


def test_the_stored_judge_comes_back_when_the_session_trusts_its_endpoint() -> None:
    config = stored_config(_stored(), trusted=TRUSTED)
    judge = config.role("judge")
    assert (config.judge, config.rubric, judge.base_url, judge.api_key_env) == (
        "judge-model", "Right?", HOME, ("HOME_KEY",))


def test_a_judge_endpoint_the_session_has_not_used_is_refused_until_named() -> None:
    run = _stored(base_url=STRANGER)
    with pytest.raises(StoreError, match="has not used") as refused:
        stored_config(run, trusted=TRUSTED)
    assert STRANGER in str(refused.value) and "\n" not in str(refused.value)
    named = stored_config(run, base_url=HOME, trusted=TRUSTED)
    assert named.role("judge").base_url == HOME


def test_a_judge_key_variable_the_session_has_not_used_is_refused() -> None:
    with pytest.raises(StoreError, match=r"\$SOMEONE_ELSES_KEY, which this session has not"):
        stored_config(_stored(api_key_env=["SOMEONE_ELSES_KEY"]), trusted=TRUSTED)


def test_the_rerun_says_where_the_judge_sends_its_calls() -> None:
    shown = rerun_endpoints(stored_config(_stored(), trusted=TRUSTED))
    assert shown.endswith(f"judge: {HOME} ($HOME_KEY)")
