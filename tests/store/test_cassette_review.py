"""A cassette's ``run.review``: kept, absent from an older cassette (None), and a garbled
one refused in one line naming the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swarmkit.errors import CassetteError
from swarmkit.record.review import review_of
from swarmkit.store import Cassette


def test_a_cassette_keeps_the_review_and_an_old_one_has_none(tmp_path: Path) -> None:
    review = review_of(["x", "y"], ["x", "z"], "review")
    run = {"run_id": "abc123", "started_at": "2026-01-01T00:00:00+00:00", "task": "t",
           "duration": 1.0, "status": "completed", "review": review.to_dict()}
    path = tmp_path / "c.swarm.json"
    Cassette(run=run).save(path, {})
    assert Cassette.load(path).review == review
    del run["review"]
    Cassette(run=run).save(path, {})
    assert Cassette.load(path).review is None
    data = json.loads(path.read_text())
    data["run"]["review"] = {"proposed": "x"}
    path.write_text(json.dumps(data))
    with pytest.raises(CassetteError, match="garbled"):
        Cassette.load(path)
