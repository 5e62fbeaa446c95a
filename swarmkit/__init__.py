"""swarmkit: planner → workers → reducer LLM swarms, first-class in Jupyter."""

from __future__ import annotations

__all__: list[str] = []
