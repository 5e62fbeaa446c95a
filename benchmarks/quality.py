"""Issue 32: does the embedded model's swarm stay on topic? Plans and answers on tasks
that name their items.

    python benchmarks/quality.py                    # every task, this checkout's swarmkit
    python benchmarks/quality.py --source DIR       # the same, swarmkit imported from DIR
    python benchmarks/quality.py --quick            # one task: checks the script works

``--source`` runs another version side by side on the same machine, e.g. main's prompts:
``git archive main swarmkit | tar -x -C /tmp/swarmkit-main`` then ``--source
/tmp/swarmkit-main``.

Each task names 2-4 items ("Compare tea, coffee and cocoa as breakfast drinks."). The
tasks were written once, as a user would write them, and are not tuned one by one. Each
runs as ``jswarm demo`` runs its task but with half its max tokens (the embedded model,
4 workers at once, 128 max tokens a worker, 384 for the planner, 256 for the reducer,
temperature 0.2, seed 7; cache and history off), and three figures are kept:

- plan coverage: the fraction of the task's items that some sub-task names;
- plan focus: the fraction of the sub-tasks that name one of the task's items;
- answer coverage: the fraction of the task's items that the final answer names.

An item is named when it appears as a word, case aside, singular or plural ("tea",
"teas"; "bus", "buses"). Each figure is averaged over the tasks. Target: >= 0.9 each.
See benchmarks/README.md, "Small-model quality (issue 32)".
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

__all__ = ["TASKS", "Scored", "main", "names", "score"]

# (task, the items it names). Written once, each in a user's words, before any prompt
# was changed; not edited to suit the model.
TASKS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Compare tea, coffee and cocoa as breakfast drinks.", ("tea", "coffee", "cocoa")),
    ("What are the pros and cons of cats and dogs as pets?", ("cat", "dog")),
    ("Explain how a hammer, a saw and a drill are used in woodworking.",
     ("hammer", "saw", "drill")),
    ("Describe the climate of Spain, Norway and Egypt.", ("Spain", "Norway", "Egypt")),
    ("Give tips for growing tomatoes, carrots, lettuce and beans in a small garden.",
     ("tomato", "carrot", "lettuce", "bean")),
    ("Compare trains, buses and bicycles for commuting to work.",
     ("train", "bus", "bicycle")),
    ("Summarize the health benefits of running and swimming.", ("running", "swimming")),
    ("Explain what Python, JavaScript and Rust are best used for.",
     ("Python", "JavaScript", "Rust")),
    ("Describe the main features of the Sun, the Moon and Mars.", ("Sun", "Moon", "Mars")),
    ("List the benefits of apples, bananas and oranges in a diet.",
     ("apple", "banana", "orange")),
    ("How should a beginner care for a violin and a piano?", ("violin", "piano")),
    ("Compare email, phone calls and meetings for team communication.",
     ("email", "phone", "meeting")),
    ("Explain the roles of the heart, the lungs and the kidneys in the body.",
     ("heart", "lung", "kidney")),
    ("Give advice on saving money on food, rent, transport and energy.",
     ("food", "rent", "transport", "energy")),
)

# As jswarm demo runs its task (swarmkit.cli.command), with half its max tokens (a
# bounded benchmark on shared cores), the cache and the history off.
OPTIONS: dict[str, Any] = {
    "model": "local", "workers": 4, "concurrency": 4, "max_tokens": 128,
    "planner_max_tokens": 384, "reducer_max_tokens": 256, "temperature": 0.2, "seed": 7,
    "cache": False, "history": False,
}
# --quick: one task, few tokens (it checks that the script works, not the figures).
QUICK: dict[str, Any] = {"max_tokens": 32, "planner_max_tokens": 256,
                         "reducer_max_tokens": 64}


def names(text: str, item: str) -> bool:
    """Whether ``text`` names ``item`` as a word, case aside, singular or plural."""
    stem = re.escape(item.casefold())
    return re.search(rf"\b{stem}(?:s|es)?\b", text.casefold()) is not None


@dataclass(frozen=True, slots=True)
class Scored:
    task: str
    plan: tuple[str, ...]
    answer: str
    plan_coverage: float
    plan_focus: float
    answer_coverage: float
    seconds: float


def score(task: str, items: tuple[str, ...], plan: tuple[str, ...], answer: str,
          seconds: float = 0.0) -> Scored:
    covered = sum(any(names(sub, item) for sub in plan) for item in items)
    focused = sum(any(names(sub, item) for item in items) for sub in plan)
    answered = sum(names(answer, item) for item in items)
    return Scored(task, plan, answer, covered / len(items),
                  focused / len(plan) if plan else 0.0, answered / len(items), seconds)


def _run_one(task: str, items: tuple[str, ...], quick: bool) -> Scored:
    import swarmkit

    began = time.perf_counter()
    run = swarmkit.run_sync(task, **{**OPTIONS, **(QUICK if quick else {})})
    seconds = time.perf_counter() - began
    return score(task, items, tuple(run.plan), run.answer or "", seconds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one task, few tokens")
    parser.add_argument("--source", type=Path,
                        help="import swarmkit from this folder (another version's copy)")
    parser.add_argument("--show", action="store_true", help="print each plan and answer")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(args.source.resolve() if args.source else ROOT))
    import swarmkit

    tasks = TASKS[:1] if args.quick else TASKS
    where = Path(swarmkit.__file__).resolve().parent.parent
    print(f"swarmkit from {'--source' if args.source else 'this checkout'} ({where.name}); "
          f"{len(tasks)} {'task' if len(tasks) == 1 else 'tasks'} on the embedded model")
    results: list[Scored] = []
    for task, items in tasks:
        scored = _run_one(task, items, args.quick)
        results.append(scored)
        print(f"  plan {scored.plan_coverage:.2f} focus {scored.plan_focus:.2f} answer "
              f"{scored.answer_coverage:.2f} {scored.seconds:5.1f} s  {task}", flush=True)
        if args.show:
            for sub in scored.plan:
                print(f"      - {sub}")
            print("      answer: " + " ".join(scored.answer.split())[:400])
    mean = statistics.fmean
    print(f"plan coverage: {mean(r.plan_coverage for r in results):.2f}")
    print(f"plan focus: {mean(r.plan_focus for r in results):.2f}")
    print(f"answer coverage: {mean(r.answer_coverage for r in results):.2f}")
    print(f"median seconds a swarm: {statistics.median(r.seconds for r in results):.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
