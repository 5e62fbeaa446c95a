"""Tutorial 06, scoring prompts: recorded by ``python notebooks/record.py 06``.

Two reducer prompts, three checks, a judge and ``repeat=3``, all on a *scripted* model
(FakeServer with the handler the notebook shows): the point is the measurement (which
scores move with the seed, which spreads overlap, when a winner is marked), and only a
script makes the answers and the judge's grades come out the same on every recording.

Like ``record_prompts.py`` this imports ``recording_models.py`` (never ``record.py``,
which imports this module). The checks the notebook's cell defines are this module's
own functions and ``swarmkit.Check`` values: the export writes their source into it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from recording_models import SCRIPTED, recorded

import swarmkit
from swarmkit.comparison import Variant
from swarmkit.comparison.export import compared
from swarmkit.export.exporter import ReplayNotebook
from swarmkit.testing import FakeReply, FakeRequest, FakeServer

__all__ = ["mentions_rollback", "scoring_prompts"]

FILE = "06-scoring-prompts"
TASK = "How do we ship a database migration safely?"
BRIEF = "Merge the findings into five short numbered steps."
THOROUGH = "Merge the findings into a thorough guide: every caveat, in prose."
RUBRIC = ("Actionable: each step says what to do and in what order; nothing the task "
          "did not ask for.")
REPEAT = 3
# The cell a reader writes live, one line in the notebook.
MAGIC_LINE = ("%%swarm --compare reducer_prompt=@brief,@thorough "
              "--check mentions_rollback,numbered,short --judge gpt-4.1 --rubric @rubric "
              "--repeat 3 --model gpt-4.1-mini")

HANDLER_SOURCE = '''def deploys(request):
    """The scripted model. Each repeat sends its own seed (none, 1, 2), and the replies
    move with it: the brief prompt's steps, the thorough prompt's guide, and the
    judge's grade of whichever answer it is shown."""
    seed = request.body.get("seed") or 0
    if request.role == "planner":
        return FakeReply(content=json.dumps({"tasks": TASKS}))
    if request.role == "worker":
        return FakeReply(content="Findings: " + request.last_user_message[-60:])
    if request.role == "reducer":
        brief = "numbered steps" in request.messages[0]["content"]
        return FakeReply(content=(STEPS if brief else GUIDE)[seed])
    answer = request.last_user_message
    grade = (8 if "1. " in answer else 5) + (0, 1, 0)[seed]
    return FakeReply(content=json.dumps(
        {"score": grade, "reason": "numbered and actionable" if grade > 6 else
         "right content, but buried in prose"}))'''
TASKS = ["List the steps of the rollout", "Name what can go wrong"]
_LAST = "5. Watch the error rate, and keep the rollback command at hand."
STEPS = [
    "1. Back up the database.\n2. Run the migration on a staging copy.\n3. Deploy "
    f"code that reads both schemas.\n4. Migrate production in batches.\n{_LAST}",
    "1. Take a backup and test the restore.\n2. Rehearse on staging.\n3. Ship code that "
    f"tolerates both schemas.\n4. Migrate in small batches.\n{_LAST}",
    "1. Back up first.\n2. Rehearse on staging.\n3. Make the code work with old and new "
    "schemas.\n4. Migrate production in batches.\n5. Watch the error rate closely.",
]
_CAVEATS = (
    " Before anything else, take a backup and prove it restores, because a backup you "
    "have never restored is a hope rather than a plan. Rehearse the migration on a "
    "staging copy of production data, timing each step, since production tables are "
    "larger and slower than any test fixture. Ship application code that reads and "
    "writes both the old and the new schema before the migration starts, so that the "
    "deploy and the migration can happen in either order. Then migrate production in "
    "small batches, watching locks, replication lag and the error rate as you go.")
GUIDE = [
    "A safe migration is mostly preparation." + _CAVEATS + " If anything looks wrong, "
    "stop and run the rollback you rehearsed.",
    "Treat the migration as a release of its own." + _CAVEATS + " Keep the previous "
    "release ready to deploy again.",
    "Most migration outages come from skipped preparation." + _CAVEATS + " Keep "
    "people watching until the new schema has carried a full day of traffic.",
]
CHECKS_SOURCE = '''import swarmkit

def mentions_rollback(answer):
    """Passes when the answer says how to undo the change."""
    return "rollback" in answer.lower()

numbered = swarmkit.Check.regex(r"(?m)^1\\. ", name="numbered")
short = swarmkit.Check.max_length(600, name="short")'''


def mentions_rollback(answer: str) -> bool:
    """Passes when the answer says how to undo the change."""
    return "rollback" in answer.lower()


def scripted_model() -> Callable[[FakeRequest], FakeReply | None]:
    """The handler the notebook shows, built from that very text."""
    namespace: dict[str, Any] = {"json": json, "FakeReply": FakeReply, "TASKS": TASKS,
                                 "STEPS": STEPS, "GUIDE": GUIDE}
    exec(HANDLER_SOURCE, namespace)  # the text is this file's own constant
    return namespace["deploys"]  # type: ignore[no-any-return]


def scoring_prompts() -> ReplayNotebook:
    checks = [mentions_rollback, swarmkit.Check.regex(r"(?m)^1\. ", name="numbered"),
              swarmkit.Check.max_length(600, name="short")]
    # Labelled as the magic labels them (--compare reducer_prompt=@brief,@thorough).
    variants = [Variant((("reducer_prompt", BRIEF),), "reducer_prompt=@brief"),
                Variant((("reducer_prompt", THOROUGH),), "reducer_prompt=@thorough")]
    with FakeServer(scripted_model()) as server:
        comparison = swarmkit.compare_sync(
            TASK, variants=variants, model="gpt-4.1-mini", judge="gpt-4.1",
            rubric=RUBRIC, checks=checks, repeat=REPEAT, workers=2, history=False,
            base_url=server.base_url)
    cassettes = [f"{FILE}.{i}.swarm.json" for i in range(1, 2 * REPEAT + 1)]
    book = ReplayNotebook()
    book.markdown(f"""# 06 · Scoring prompts: checks, a judge, repeats and a winner

Tutorial 05 put two prompts side by side and left the verdict to your eyes. This one
measures instead, inside the same `--compare`, with its budget, cache and replay:

1. **Checks**: Python functions that score each answer, pass/fail or 0 to 1, plus the
   built-ins (`swarmkit.Check.contains`, `regex`, `valid_json`, `matches_schema`,
   `max_length`, `max_cost`, `max_latency`).
2. **A judge**: a model that grades each answer against a rubric, 0 to 10. Its calls
   are a role of their own (`judge`, steps `judge-0`, ...): budgeted, cached, recorded
   and replayed like any other.
3. **Repeats**: `--repeat 3` runs each variant three times, each with its own seed, so
   every score has a mean *and* a spread.
4. **The winner rule**: a variant is marked the winner of a score only when its lead
   is bigger than the noise.

Everything here was recorded with {SCRIPTED}. Scores only mean something if the same
answer gets the same grade each time it is replayed, so this notebook uses a script.
Every cell replays: no network, no key, the same output every time.""")
    book.load_extension()
    book.markdown(f"""## 1 · The checks and the prompts

A check takes the final answer (its first parameter is `answer`), each worker's output
(`output`) or the whole run (`run`: cost, latency, outputs). It returns a bool, a number
from 0 to 1, or `(score, reason)`. A check that raises scores 0 with its error and
never stops the comparison. In a notebook:

```python
{CHECKS_SOURCE}

brief = "{BRIEF}"
thorough = "{THOROUGH}"
rubric = "{RUBRIC}"
```

Then, in a cell of its own:

```
{MAGIC_LINE}
{TASK}
```

`--check` takes names from the notebook, like `@name`. `--judge MODEL` grades each
answer against `--rubric` (text, or `@name`).""")
    book.markdown(f"""## 2 · The scripted model

`swarmkit.testing.FakeServer(deploys)` answers every role, the judge included. The
answers and the grades move with the seed, so each repeat shows something different.
The names `gpt-4.1-mini` and `gpt-4.1` only price the tokens the server reports.

```python
{HANDLER_SOURCE}
```""")
    book.markdown(f"""## 3 · The comparison, scored

From Python the same comparison is `swarmkit.compare_sync(task, variants=[...],
checks=[...], judge=..., rubric=..., repeat=3)`. The cell below replays it: the checks'
source is written into the cell, so the replay runs them again, and the judge's calls
come from the cassettes, one per variant and repeat.

{recorded(comparison.runs[0], "the scripted model")}""")
    book.replayed(compared(TASK, comparison.variants,
                           [run for group in comparison.repeats for run in group],
                           names=cassettes, repeat=REPEAT))
    book.markdown("""**Reading the scores block.** For each score and variant: the mean
over the repeats, the spread (their sample standard deviation), the range, and how many
repeats were scored. The rule, as the view states it:

> winner: the highest mean, marked only when its mean ± spread lies wholly above every
> other variant's (at least 2 repeats)

- `numbered` and `short` split the variants every time, with no spread at all: the
  brief prompt wins both.
- `judge` moves with the seed (8, 9, 8 against 5, 6, 5 out of 10). The two intervals
  are still far apart, so the brief prompt wins that too.
- `mentions_rollback` passes the brief prompt's answer twice out of three and the
  thorough one's once: a higher mean (0.67 against 0.33), but each spread is 0.58 and
  the intervals overlap, so there is **no winner**. A lead inside the noise earns no
  mark; more repeats would tell.

With `--repeat 1` (the default) there is no spread, so no winner is ever marked: only
the scores.""")
    book.markdown("""## 4 · The scores as data

`comparison.scores()` is a DataFrame, one row per (variant, repeat, check), with the
score from 0 to 1 and its reason. The judge's rows are named `judge`.""")
    book.code("scores = comparison.scores()\n"
              "scores.head(8)")
    book.code('scores.pivot_table(index="check", columns="variant", values="score")')
    book.markdown("""`comparison.table()` gains a mean column per score, beside status,
tokens, cost and latency:""")
    book.code("print(comparison.table().text())")
    book.markdown("""## 5 · What the judge saw

Each judge call keeps its prompt and its reply. The run's own view shows both in its
drill-down, together with the score parsed from the reply. The judge is also a row of
the spend-by-role table, under the run's budget like every other role:""")
    book.code("run = comparison[0]\n"
              "judge = next(call for call in run.calls if call.role == 'judge')\n"
              "print(judge.messages[-1]['content'])\n"
              "print('--- reply:', judge.output)\n"
              "print(run.tables().role_table())")
    book.markdown("""## Running it live

The comparison cell is Python: `SWARMKIT_LIVE` does not switch it. Delete its
`replay=[...]` argument to run it for real. It names hosted models, so set
`OPENAI_API_KEY` first (or `base_url=` for any OpenAI-compatible endpoint). On the
embedded model (`model="local"`, `judge="local"`), the judge works but a 135M model is a
weak judge, and swarmkit says so in one line. The cache keys on each repeat's seed, so
re-running the cell live is served from the cache at $0, every repeat included.""")
    return book
