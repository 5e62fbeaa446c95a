"""The judge's own key variable and base URL credentials are secrets like any role's:
every writer scans for them, and text from outside is scrubbed of them."""

from __future__ import annotations

from swarmkit.config.swarmconfig import SwarmConfig
from swarmkit.credentials.secrets import secret_values


def test_the_judges_key_and_url_password_are_known_secrets() -> None:
    config = SwarmConfig().with_options(
        model="m", judge="j", judge_api_key_env="JUDGE_ONLY_KEY",
        judge_base_url="http://user:judge-password-0001@127.0.0.1:9/v1")
    env = {"JUDGE_ONLY_KEY": "sk-judge-secret-000000", "OPENAI_API_KEY": "sk-main-000000000"}
    found = secret_values(config, env)
    assert found["JUDGE_ONLY_KEY"] == "sk-judge-secret-000000"
    assert found["the password in the judge base_url"] == "judge-password-0001"
    # Without a judge its fields name nothing to look for.
    plain = secret_values(SwarmConfig().with_options(model="m"), env)
    assert "JUDGE_ONLY_KEY" not in plain and plain["OPENAI_API_KEY"] == "sk-main-000000000"
