"""Comparing: one task under several option sets, side by side (``--compare``).

    variants     ``--compare KEY=V1,V2`` and ``compare(variants=...)`` as a grid of option sets
    runner       ``ComparisonRunner``, ``compare`` / ``compare_sync``: one engine per variant,
                 concurrently, under one budget
    result       ``Comparison``: what a comparison leaves the user (its Runs and their
                 repeats, table, scores, export)
    figures      one row per variant: status, tokens, cost, latency, score means (the table)
    view         the side-by-side view: figures, plans and answers, text and HTML
    scores       a comparison's score rows, their summary over the repeats, the winner rule
    scoreview    the view's scores block, text and HTML
    export       a comparison as a notebook that replays offline

Above ``api`` (the runner builds each variant's engine with its wiring). The one call that
every variant makes alike is sent once by ``provider.sharedcalls``.
"""

from __future__ import annotations

from .result import Comparison
from .runner import ComparisonRunner, compare, compare_sync
from .variants import MAX_VARIANTS, Variant, parse_compare, variant_grid, variants_of

__all__ = [
    "MAX_VARIANTS",
    "Comparison",
    "ComparisonRunner",
    "Variant",
    "compare",
    "compare_sync",
    "parse_compare",
    "variant_grid",
    "variants_of",
]
