"""Tutorial 05, exploring prompts: recorded by ``python notebooks/record.py 05``.

- ``--compare`` (two worker system prompts) and ``--tasks`` over a DataFrame run on the
  embedded local model: both show their point with a small model;
- ``--schema`` runs on a *scripted* model (FakeServer with the handler shown in the
  notebook): a deterministic invalid reply is what shows the repair and the failure.

The models, their settings and what the notebook says about them come from
``recording_models.py``, as in ``record.py``, which imports this module (never the
other way round). pandas and pydantic are imported only when the tutorial is built.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from recording_models import LIVE_SWITCH, LOCAL, SCRIPTED, local_options, recorded

import swarmkit
from swarmkit.comparison.export import compared
from swarmkit.export.exporter import ReplayNotebook
from swarmkit.testing import FakeReply, FakeRequest, FakeServer

__all__ = ["exploring_prompts"]

PAPERS = {
    "title": ["Attention Is All You Need", "Deep Residual Learning", "Dropout"],
    "field": ["sequence models", "image recognition", "regularisation"],
}
DATAFRAME_SOURCE = """import pandas as pd

papers = pd.DataFrame({
    "title": ["Attention Is All You Need", "Deep Residual Learning", "Dropout"],
    "field": ["sequence models", "image recognition", "regularisation"],
})
papers"""
TEMPLATE = "In one sentence, what is the paper {title} ({field}) known for?"
PROMPTS = ("Answer in one short sentence.", "Answer as three short bullet points.")

SCHEMA_SOURCE = '''from pydantic import BaseModel

class Verdict(BaseModel):
    language: str
    score: int  # 1 (avoid) to 5 (great) for a first backend service'''

HANDLER_SOURCE = '''def verdicts(request):
    """The scripted model: the planner names three languages; each worker answers JSON.
    The Go worker forgets the score once (repaired); the Perl worker always gives a
    word where the schema wants a whole number (failed for good)."""
    if request.role == "planner":
        return FakeReply(content=json.dumps({"tasks": [f"Rate {x}" for x in LANGUAGES]}))
    if request.role == "reducer":
        return FakeReply(content="Go and Python both fit; skip Perl for this one.")
    asked = " ".join(str(m["content"]) for m in request.messages if m["role"] == "user")
    language = next(x for x in LANGUAGES if f"Rate {x}" in asked)
    repairing = any(m["role"] == "assistant" for m in request.messages)
    if language == "Go" and not repairing:
        return FakeReply(content=json.dumps({"language": "Go"}))
    if language == "Perl":
        return FakeReply(content=json.dumps({"language": "Perl", "score": "meh"}))
    return FakeReply(content=json.dumps({"language": language, "score": SCORES[language]}))'''
LANGUAGES = ["Python", "Go", "Perl"]
SCORES = {"Python": 5, "Go": 4}


def scripted_model() -> Callable[[FakeRequest], FakeReply | None]:
    """The handler the notebook shows, built from that very text."""
    namespace: dict[str, Any] = {"json": json, "FakeReply": FakeReply,
                                 "LANGUAGES": LANGUAGES, "SCORES": SCORES}
    exec(HANDLER_SOURCE, namespace)  # the text is this file's own constant
    return namespace["verdicts"]  # type: ignore[no-any-return]


def exploring_prompts() -> ReplayNotebook:
    import pandas as pd
    from pydantic import BaseModel

    class Verdict(BaseModel):
        language: str
        score: int

    task = "Give two practical tips for writing clear commit messages."
    variants = [{"system_prompt": prompt} for prompt in PROMPTS]
    comparison = swarmkit.compare_sync(task, variants=variants, workers=2,
                                       **local_options(2))
    papers = pd.DataFrame(PAPERS)
    mapped = swarmkit.run_sync("Say what each paper is known for", tasks=papers,
                               task_template=TEMPLATE, reduce=False,
                               **local_options(len(papers)))
    with FakeServer(scripted_model()) as server:
        typed = swarmkit.run_sync(
            "Rate three languages for a first backend service.", model="gpt-4.1-mini",
            base_url=server.base_url, output_type=Verdict, history=False)
    file = "05-exploring-prompts"
    book = ReplayNotebook()
    book.markdown(f"""# 05 · Exploring prompts: variants, your own sub-tasks, typed outputs

Three tools for finding the prompt that works:

1. **`--compare`** runs variants of one swarm side by side, concurrently and under one
   budget; calls two variants share are made once.
2. **`--tasks`** gives the swarm its sub-tasks (a list, a Series, or DataFrame rows
   through `--task-template`) instead of asking a planner.
3. **`--schema`** makes every worker answer JSON matching a pydantic model; `worker.data`
   and `run.to_dataframe()` hold the typed values.

Parts 1 and 2 were recorded with {LOCAL}; part 3 with {SCRIPTED}, because what it shows
(a reply that breaks the schema, then its repair) has to happen on cue. Every cell
replays: no network, no key, the same output every time.""")
    book.load_extension()
    book.markdown(f"""## 1 · Two system prompts side by side

In a notebook, `--compare KEY=A,B` names the variants; `@name` takes a value from the
notebook, which suits prompts:

```
brief = "{PROMPTS[0]}"
bullets = "{PROMPTS[1]}"
```
```
%%swarm --compare system=@brief,@bullets --model local --workers 2
{task}
```

From Python it is `swarmkit.compare_sync(task, variants=[...], **common)`, which the
cell below uses, replaying each variant from its own cassette. Only the workers' prompt
differs, so the planner runs **once** and both variants get its plan; the workers and
reducers run per variant. The output is the side-by-side view. (A 135M model follows
a system prompt loosely; the point here is the mechanics.)

{recorded(comparison.runs[0], LOCAL)}""")
    book.replayed(compared(task, comparison.variants, comparison.runs,
                           names=[f"{file}.compare.{i}.swarm.json" for i in (1, 2)]))
    book.markdown("""Each variant is an ordinary `Run` (`comparison[0]`, or by label). A
call one variant was served from another's is paid once and reads `cached` in the served
variant's tables: here the planner's, made by one variant for both.""")
    book.code("for label, run in zip(comparison.labels, comparison.runs):\n"
              "    served = [c.step for c in run.calls if c.source == 'cache']\n"
              "    print(f'--- {label}: served from the other variant: {served}')\n"
              "    print(run.workers[0].output[:300])")
    book.markdown("""## 2 · Your own sub-tasks: a DataFrame

`--tasks NAME` skips the planner: one worker per item. For a DataFrame,
`--task-template` fills `{column}` from each row, with the same rules as `{name}` in
a cell. `--no-reduce` ends the run with the workers' outputs: a map, no merge.""")
    book.code(DATAFRAME_SOURCE)
    book.markdown(f"""Live, the cell is

```
%%swarm --tasks papers --task-template "{TEMPLATE}" --no-reduce --model local
Say what each paper is known for
```

The given tasks are recorded with the run, so the replay below needs neither the
DataFrame nor `--tasks`. The plan is the three filled-in rows, and no planner call was
made.

{recorded(mapped, LOCAL)}""")
    book.swarm(mapped, name=f"{file}.tasks.swarm.json")
    book.markdown("One row per worker, as a DataFrame:")
    book.code('_swarm.to_dataframe()[["index", "status", "output"]]')
    book.markdown("""## 3 · Typed worker outputs: `--schema`

`--schema Verdict` (`output_type=Verdict` from Python) takes a pydantic model (or a JSON
schema dict) from the notebook. Workers are asked for JSON matching it; each reply is
validated, an invalid one is sent back once with the validation error, and a second
miss leaves the worker `failed (schema)` with the error on its row.""")
    book.code(SCHEMA_SOURCE)
    book.markdown(f"""This part is scripted. The model is `swarmkit.testing.FakeServer`
answering with this handler (`FakeServer(verdicts)`; the name `gpt-4.1-mini` only prices
the tokens it estimates):

```python
{HANDLER_SOURCE}
```

Live, the cell is `%%swarm --schema Verdict --model gpt-4.1-mini` with the task below.
The replay keeps the schema as the run recorded it, JSON text, in the options cell.

{recorded(typed, "the scripted model")}""")
    book.swarm(typed, name=f"{file}.schema.swarm.json")
    book.markdown("""`worker.data` is the parsed reply; `to_dataframe()` has one column
per field of the schema. A failed worker has no data, so pandas would make `score` a
float column with `NaN`; `convert_dtypes()` keeps it whole numbers with `<NA>`:""")
    book.code("print(_swarm.workers[1].data)\n"
              "frame = _swarm.to_dataframe()\n"
              'frame[["index", "status", "attempts", "language", "score", "error"]]'
              ".convert_dtypes()")
    book.markdown(f"""{LIVE_SWITCH}

Part 1's cell is Python, not `%%swarm`, and `SWARMKIT_LIVE` does not switch it: delete
its `replay=[...]` line to run the comparison live on the embedded model, no key. Part 2
runs live with `SWARMKIT_LIVE` set, on the embedded model and the same three rows (a
replay cell's given tasks come from its cassette, live too). Part 3 names a hosted
model, so it keeps replaying until `OPENAI_API_KEY` is set; it needs a model that
follows a JSON schema, which any current hosted model does. For a hosted model in parts
1 and 2, use `--model gpt-4.1-mini` (or `model="gpt-4.1-mini"`) and set
`OPENAI_API_KEY`.""")
    return book
