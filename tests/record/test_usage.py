"""Usage: tokens, requests and cost that add up, where unknown stays unknown."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

from swarmkit.record.rows import CallRecord, WorkerRecord
from swarmkit.record.usage import Usage


def test_zero_is_the_start_of_any_sum() -> None:
    usage = Usage(10, 5, 2, 1, requests=1, cost=Decimal("0.0012"))
    assert Usage() + usage == usage == usage + Usage()
    assert sum([usage, usage], Usage()) == Usage(20, 10, 4, 2, 2, Decimal("0.0024"))


def test_cost_adds_as_decimal_without_float_error() -> None:
    total = sum((Usage(cost=Decimal("0.1")) for _ in range(3)), Usage())
    assert total.cost == Decimal("0.3")
    assert isinstance(total.cost, Decimal)


def test_unknown_stays_unknown_field_by_field() -> None:
    known = Usage(10, 5, 0, 0, 1, Decimal("0.01"))
    unpriced = Usage(7, 3, 0, 0, 1, None)  # a model with no price
    silent = Usage(None, None, None, None, 1, Decimal(0))  # a server that gave no usage
    total = known + unpriced
    assert total.cost is None
    assert (total.prompt_tokens, total.completion_tokens, total.requests) == (17, 8, 2)
    total = known + silent
    assert total.cost == Decimal("0.01")
    assert total.prompt_tokens is None and total.total_tokens is None
    assert total.requests == 2
    # Once unknown, adding known parts never turns it back into a number.
    assert (total + known + known).prompt_tokens is None
    assert (unpriced + known + known).cost is None


def test_adding_something_else_is_a_type_error() -> None:
    try:
        Usage() + 1  # type: ignore[operator]
    except TypeError:
        pass
    else:
        raise AssertionError("Usage + int must raise TypeError")


def test_the_json_form_holds_tokens_only_as_files_always_had() -> None:
    usage = Usage(10, 5, 2, 1, requests=1, cost=Decimal("0.5"))
    assert usage.to_dict() == {"prompt_tokens": 10, "completion_tokens": 5,
                               "cached_tokens": 2, "reasoning_tokens": 1, "requests": 1}
    assert Usage.from_dict(usage.to_dict()) == replace(usage, cost=Decimal(0))


def _call(cost: Decimal | None) -> CallRecord:
    return CallRecord(step="worker-1", role="worker", model="m", source="live",
                      usage=Usage(10, 5, 0, 0, 1), cost_usd=cost, started=0.0, latency=1.0,
                      attempts=1, fingerprint="f")


def test_a_record_usage_carries_its_stored_cost() -> None:
    call = _call(Decimal("0.25"))
    assert call.usage.cost == call.cost_usd == Decimal("0.25")
    assert _call(None).usage.cost is None
    # The JSON form is unchanged: the cost is in cost_usd, not inside usage.
    data = call.to_dict()
    assert data["cost_usd"] == "0.25" and "cost" not in data["usage"]
    again = CallRecord.from_dict(data)
    assert again == call and again.usage.cost == Decimal("0.25")
    worker = WorkerRecord(1, "t", "completed", usage=call.usage + call.usage,
                          cost_usd=Decimal("0.5"))
    assert replace(worker, cost_usd=None).usage.cost is None
    assert WorkerRecord.from_dict(worker.to_dict()).usage.cost == Decimal("0.5")


def test_the_repr_is_the_one_tutorials_print() -> None:
    usage = Usage(1, 2, 0, 0, requests=1, cost=Decimal("0.5"))
    assert repr(usage) == ("Usage(prompt_tokens=1, completion_tokens=2, cached_tokens=0, "
                           "reasoning_tokens=0, requests=1)")


def test_total_is_the_same_sum_as_adding_one_by_one() -> None:
    parts = [
        Usage(10, 5, 0, 0, 1, Decimal("0.0001")),
        Usage(3, None, 1, 0, 1, Decimal("1") / Decimal("3")),  # 28 digits: order matters
        Usage(7, 2, None, 4, 2, Decimal("2.50")),
        Usage(1, 1, 1, 1, 1, None),
        Usage(2, 2, 2, None, 1, Decimal("0.1")),
    ]
    for end in range(len(parts) + 1):
        added = sum(parts[:end], Usage())
        total = Usage.total(iter(parts[:end]))
        assert total == added
        assert str(total.cost) == str(added.cost)  # the same digits, not only the same value
    assert Usage.total([]) == Usage()
    assert Usage.total(parts).completion_tokens is None
    assert Usage.total(parts).cost is None
    assert Usage.total(parts[:3]).cost == sum((p.cost for p in parts[:3]), Decimal(0))


def test_a_total_of_one_usage_is_that_usage_unless_its_cost_would_read_otherwise() -> None:
    # A worker of one call keeps its call's usage, not an equal copy of it.
    for one in (Usage(10, 5, 0, 0, 1, Decimal("0.000150")), Usage(1, None, 0, 0, 1, None),
                Usage(0, 0, 0, 0, 1, Decimal(0))):
        assert Usage.total([one]) is one
        assert Usage.total(iter([one])) is one
    # 0 + 1E+1 is 10: the sum is written as adding would write it, as before.
    tens = Usage(1, 1, 0, 0, 1, Decimal("1E+1"))
    total = Usage.total([tens])
    assert total is not tens and str(total.cost) == str(sum([tens], Usage()).cost) == "10"
