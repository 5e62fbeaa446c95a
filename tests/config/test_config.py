"""SwarmConfig: public option names, per-role overrides, coercion and one-line errors."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest

from swarmkit.config.swarmconfig import AUTO_MODEL, SwarmConfig
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


# -- the option table ----------------------------------------------------------------------

README = Path(__file__).resolve().parents[2] / "README.md"
FIX_README = ('python -c "from pathlib import Path; from swarmkit.config.options import '
              "replace_readme_table as r; p = Path('README.md'); "
              'p.write_text(r(p.read_text()))"')


def test_every_config_field_has_exactly_one_row() -> None:
    from dataclasses import fields

    from swarmkit.config import RoleConfig
    from swarmkit.config.options import NOT_FIELDS, OPTIONS

    top = [f.name for f in fields(SwarmConfig) if f.name not in ("planner", "worker", "reducer")]
    rows = [row.attr for row in OPTIONS if not row.role and row.name not in NOT_FIELDS]
    assert sorted(rows) == sorted(top)
    assert [row.attr for row in OPTIONS if row.role] == [f.name for f in fields(RoleConfig)]
    names = [name for row in OPTIONS for name in row.names()]
    assert len(names) == len(set(names))
    # An exported notebook sets what its replay line cannot with %swarm config.
    assert all(row.on("config") for row in OPTIONS if row.on("replay"))


def test_every_config_key_is_an_option_of_swarm_config() -> None:
    from swarmkit.config.options import config_keys

    for key in config_keys():
        try:
            SwarmConfig().with_options(**{key: object()})
        except ConfigError as error:
            assert "unknown option" not in str(error), key


def test_readme_options_table_is_the_generated_one() -> None:
    from swarmkit.config.options import replace_readme_table

    text = README.read_text(encoding="utf-8")
    assert replace_readme_table(text) == text, (
        f"README.md's options table differs from swarmkit/config/options.py; run {FIX_README}"
    )


def test_a_row_put_on_every_surface_appears_on_every_surface(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Adding an option is one row: the magic, %swarm config, the CLI and the docs follow."""
    from dataclasses import replace

    from swarmkit.cli import command as cli
    from swarmkit.cli.runargs import run_options
    from swarmkit.config import options as option_table
    from swarmkit.magics import flags as magic_options
    from swarmkit.magics.commands import check_config_key

    row = next(r for r in option_table.OPTIONS if r.name == "call_timeout")
    assert not row.on("magic")
    widened = replace(row, surfaces=option_table.SURFACES, help="one call's time limit")
    monkeypatch.setattr(option_table, "OPTIONS",
                        tuple(widened if r is row else r for r in option_table.OPTIONS))

    flags = magic_options._table_flags()
    parsed = magic_options.build_parser(flags).parse_args(["--call-timeout", "5"])
    assert parsed.call_timeout == "5"
    assert "one call's time limit" in magic_options.build_parser(flags).format_help()
    check_config_key("call_timeout", "%swarm config")  # accepted
    args = cli._parser().parse_args(["run", "task", "--call-timeout", "7"])
    assert run_options(args) == {"call_timeout": "7"}
    assert "| `call_timeout` | `--call-timeout` | `--call-timeout` | - | one call's time limit |" \
        in option_table.markdown_table()


def test_a_row_off_the_config_surface_is_refused_by_percent_swarm_config() -> None:
    from IPython.core.error import UsageError

    from swarmkit.magics.commands import check_config_key

    for key, says in [("refresh", "unknown option 'refresh'"),
                      ("max_workers", "unknown option 'max_workers' (did you mean workers?)"),
                      ("wrokers", "(did you mean workers?)"),
                      ("prices", "%swarm prices")]:
        with pytest.raises(UsageError, match=re.escape(says)):
            check_config_key(key, "%swarm config")


@pytest.mark.parametrize("typed", ["-1", -1, Decimal("-1"), "$-1.00"])
def test_a_budget_error_shows_the_amount_as_written_not_its_decimal_repr(typed: object) -> None:
    with pytest.raises(ConfigError) as caught:
        SwarmConfig.from_options(budget=typed)
    assert "Decimal(" not in str(caught.value)
    assert re.fullmatch(r"budget must be a positive USD amount, got -1(\.00)?", str(caught.value))
