"""``--compare`` flags to variants: the grid, ``@name`` values, one-line refusals."""

from __future__ import annotations

import pytest

from swarmkit.errors import ConfigError
from swarmkit.variants import check_count, parse_compare, variants_of


def test_repeated_keys_combine_as_a_grid_the_first_key_slowest() -> None:
    brief, detailed = "Answer in one line.", "Answer with evidence."
    variants = parse_compare(["model=a,b", "system=@brief,@detailed"],
                             {"brief": brief, "detailed": detailed})
    assert [v.label for v in variants] == [
        "model=a · system=@brief", "model=a · system=@detailed",
        "model=b · system=@brief", "model=b · system=@detailed"]
    assert variants[1].as_dict() == {"model": "a", "system_prompt": detailed}
    check_count(variants, 4)
    with pytest.raises(ConfigError,
                       match=r"makes 4 variants, over the cap of 3; .* --max-variants 4"):
        check_count(variants, 3)


def test_python_variants_are_labelled_by_their_options() -> None:
    variants = variants_of([{"model": "a", "temperature": 0}, {"model": "b"}])
    assert [v.label for v in variants] == ["model=a · temperature=0", "model=b"]


@pytest.mark.parametrize(("flags", "says"), [
    (["model"], "write KEY=VALUE,VALUE"),
    (["model=a,,b"], "write KEY=VALUE,VALUE"),
    (["model=a,a"], "a value is listed twice"),
    (["model=a,b", "model=c,d"], "--compare model is given twice"),
    (["system=@nowhere,@brief"], "'nowhere' names no variable in the notebook"),
    (["budget=1,2"], "one budget covers every variant"),
    (["replay=a.json,b.json"], "replay a comparison from its exported notebook"),
    (["colour=red,blue"], "--compare colour: no such option"),
])
def test_bad_compare_flags_get_one_line_that_says_what_to_do(flags: list[str], says: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_compare(flags, {"brief": "x"})
    assert says in str(caught.value) and len(str(caught.value).splitlines()) == 1


def test_one_variant_is_no_comparison() -> None:
    with pytest.raises(ConfigError, match="at least two variants"):
        check_count(parse_compare(["model=a"], {}), 8)
