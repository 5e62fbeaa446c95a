"""``--compare`` flags to variants: the grid, ``@name`` values, one-line refusals."""

from __future__ import annotations

import pytest

from swarmkit.comparison.variants import check_count, parse_compare, value_labels, variants_of
from swarmkit.errors import ConfigError


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


# -- compared by value, labelled where they differ -----------------------------------------

TABLE = "Merge the findings into a table"
LIST = "Merge the findings into a list"


def test_reducer_prompts_sharing_their_first_words_are_two_variants_shown_where_they_differ(
) -> None:
    variants = variants_of([{"worker_model": "gpt-4.1", "reducer_prompt": TABLE},
                            {"worker_model": "gpt-4.1", "reducer_prompt": LIST}])
    assert [v.label for v in variants] == [
        "worker_model=gpt-4.1 · reducer_prompt=…into a table",
        "worker_model=gpt-4.1 · reducer_prompt=…into a list"]
    assert variants[0].as_dict()["reducer_prompt"] == TABLE  # the value is whole


def test_only_the_values_that_would_read_the_same_are_shown_from_where_they_differ() -> None:
    labels = value_labels("reducer_prompt", [TABLE, LIST, "Be brief.", TABLE + " of costs"])
    assert labels == ["reducer_prompt=…into a table", "reducer_prompt=…into a list",
                      "reducer_prompt=Be brief.", "reducer_prompt=…into a table of costs"]
    long = "x" * 30
    assert value_labels("system_prompt", [long + " one", long + " two"]) == [
        "system_prompt=…one", "system_prompt=…two"]


def test_values_that_differ_in_what_a_label_cannot_show_are_numbered() -> None:
    # Whitespace is collapsed in a label; two classes may share a name.
    assert value_labels("system_prompt", ["Be  brief.", "Be brief."]) == [
        "system_prompt#1", "system_prompt#2"]
    first = type("Answer", (), {})
    second = type("Answer", (), {})
    variants = variants_of([{"schema": first}, {"schema": second}])
    assert [v.label for v in variants] == ["output_type#1", "output_type#2"]


@pytest.mark.parametrize("specs", [
    [{"model": "a", "temperature": 0}, {"temperature": 0, "model": "a"}],
    [{"system": "Be brief."}, {"system_prompt": "Be brief."}],
    [{"reducer_prompt": TABLE}, {"reducer_prompt": "Merge the findings into a table"}],
])
def test_variants_equal_by_value_are_refused_however_they_are_written(
    specs: list[dict[str, object]],
) -> None:
    with pytest.raises(ConfigError, match=r"^two variants are the same \(variants 1 and 2: "
                                          r".*\); each must differ, so change or drop one$"):
        variants_of(specs)


def test_two_names_holding_one_value_make_the_same_variant() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_compare(["system=@brief,@short"], {"brief": "Be brief.", "short": "Be brief."})
    assert str(caught.value) == ("two variants are the same (variants 1 and 2: system=@brief "
                                 "and system=@short); each must differ, so change or drop one")


class _Elementwise:
    """A value whose == is not a bool (as a DataFrame's is): compared by identity."""

    def __eq__(self, other: object) -> object:
        return [True]

    __hash__ = object.__hash__


class _Refusing:
    def __eq__(self, other: object) -> bool:
        raise TypeError("cannot compare")

    __hash__ = object.__hash__


def test_values_without_a_plain_equality_are_compared_by_identity() -> None:
    a, b = _Elementwise(), _Elementwise()
    assert len(variants_of([{"tasks": a}, {"tasks": b}])) == 2
    with pytest.raises(ConfigError, match="two variants are the same"):
        variants_of([{"tasks": a}, {"tasks": a}])
    assert len(variants_of([{"tasks": _Refusing()}, {"tasks": _Refusing()}])) == 2


def test_long_values_written_on_the_line_are_labelled_where_they_differ() -> None:
    variants = parse_compare([f"reducer_prompt={TABLE},{LIST}", "model=a,b"], {})
    assert [v.label for v in variants] == [
        "reducer_prompt=…into a table · model=a", "reducer_prompt=…into a table · model=b",
        "reducer_prompt=…into a list · model=a", "reducer_prompt=…into a list · model=b"]
    assert variants[2].as_dict() == {"reducer_prompt": LIST, "model": "a"}
