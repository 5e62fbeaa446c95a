"""``RunRecord.review`` through JSON: kept when set, no key when unset (so a run that was
not reviewed writes what it always did), and a file from before the field loads; a
garbled review is a one-line RecordError."""

from __future__ import annotations

import pytest

from swarmkit.errors import RecordError
from swarmkit.record.review import review_of
from swarmkit.record.runrecord import RunRecord


def _record() -> RunRecord:
    run = RunRecord("abc123", "Name rivers", status="completed", plan=["x", "z"])
    run.review = review_of(["x", "y"], ["x", "z"], "review")
    return run


def test_a_review_round_trips_and_an_unreviewed_run_has_no_key() -> None:
    run = _record()
    assert RunRecord.from_json(run.to_json()).review == run.review
    assert "".join(run.json_parts()) == run.to_json(indent=None)
    plain = RunRecord("abc123", "Name rivers", status="completed")
    data = plain.to_dict()
    assert "review" not in data
    assert RunRecord.from_dict(data).review is None  # what files before the field hold


def test_a_garbled_review_is_one_line() -> None:
    data = _record().to_dict()
    data["review"]["approved_by"] = "the cat"
    with pytest.raises(RecordError, match="garbled") as caught:
        RunRecord.from_dict(data)
    assert "\n" not in str(caught.value)
