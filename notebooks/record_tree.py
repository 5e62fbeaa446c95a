"""Tutorial 07, swarms of swarms: recorded by ``python notebooks/record.py 07``.

A ``depth=2`` run on a *scripted* model (FakeServer with the handler below): two of the
plan's three workers call ``split_task``, one into three sub-tasks and one into two;
the third answers on its own. Only a script makes a model split the same way on every
recording (the small local model does not call tools reliably). The notebook shows the
tree in the tables, the timeline and the drill-down, and reads it from Python.

Like ``record_scores.py`` this imports ``recording_models.py`` (never ``record.py``,
which imports this module).
"""

from __future__ import annotations

import json

from recording_models import LIVE_SWITCH, SCRIPTED, recorded

import swarmkit
from swarmkit.export.exporter import ReplayNotebook
from swarmkit.testing import FakeReply, FakeRequest, FakeServer, split_script

__all__ = ["swarms_of_swarms"]

FILE = "07-swarms-of-swarms.ipynb"
TASK = "Survey the vector databases a small team could run next quarter."
TASKS = ["Hosted vector databases", "Vector search inside Postgres",
         "Embedded vector libraries"]
SPLITS = {"worker-1": ["Pinecone", "Weaviate Cloud", "Qdrant Cloud"],
          "worker-2": ["pgvector", "pgvecto.rs"]}
FACTS = {
    "Pinecone": "Pinecone: fully managed, serverless tiers, no self-hosting.",
    "Weaviate Cloud": "Weaviate Cloud: managed Weaviate, hybrid keyword + vector search.",
    "Qdrant Cloud": "Qdrant Cloud: managed Qdrant, filters on payloads, a free tier.",
    "pgvector": "pgvector: an extension in most managed Postgres; HNSW and IVFFlat.",
    "pgvecto.rs": "pgvecto.rs: a Rust extension, faster filtered search, fewer hosts.",
    "Embedded vector libraries": ("Embedded: Chroma or LanceDB run in-process; "
                                  "no server, one machine."),
}


def _facts(text: str) -> list[str]:
    return [fact for name, fact in FACTS.items() if fact in text or name in text]


def _answer(request: FakeRequest) -> FakeReply | None:
    """The scripted model's answers where no split is due: the plan, each leaf's fact,
    a parent's answer on top of its children's merge, and every merge."""
    if request.role == "planner":
        return FakeReply(content=json.dumps({"tasks": TASKS}))
    if request.role == "reducer":
        text = "\n".join(str(m.get("content") or "") for m in request.messages[1:])
        return FakeReply(content="\n".join(f"- {fact}" for fact in _facts(text)))
    merged = [str(m.get("content")) for m in request.messages if m.get("role") == "tool"]
    if merged:  # after its split: the child swarm's merged answer, in its own words
        return FakeReply(content="From my sub-tasks:\n" + merged[0])
    subtask = request.last_user_message.rsplit(":", 1)[-1].strip()
    return FakeReply(content=FACTS.get(subtask, f"{subtask}: nothing found."))


def swarms_of_swarms() -> ReplayNotebook:
    with FakeServer(split_script(SPLITS, then=_answer)) as server:
        run = swarmkit.run_sync(TASK, model="gpt-4.1-mini", base_url=server.base_url,
                                workers=3, depth=2, history=False)
    book = ReplayNotebook()
    name = book.cassette_name(FILE)
    book.markdown(f"""# 07 · Swarms of swarms: a worker splits its sub-task

Some sub-tasks are themselves broad: "the hosted vector databases" is three products, and
one worker must answer for all of them in one call. With `--depth 2` (Python:
`depth=2`) each worker is offered a built-in tool, `split_task`, whose one parameter is a
list of 2 to `--max-children` (default 4) sub-tasks. Calling it runs them as a **child
swarm**: child workers, then a reducer whose merged answer is the tool's result; the
worker then writes its own answer from it, as after any tool call. At the run's depth no
split is offered, so `--depth 3` lets a child split once more.

One budget, one set of slots: every child call reserves from the run's `--budget`,
`--concurrency` bounds the calls in flight across the whole tree (a parent waiting for
its children holds no slot), and `--max-total-workers` caps the tree's workers. A split
over a cap is cut, and the tool's result tells the worker so.

{recorded(run, SCRIPTED)} The script plans three sub-tasks; worker 1 splits into three
products, worker 2 into two extensions, worker 3 answers on its own.""")
    book.load_extension()
    book.markdown("""The tables show one row per worker of the tree, each child under its
parent: dotted ids (`1.2` is worker 1's second child) and a **depth** column. The totals
line counts the tree (workers, splits, leaves, depth); **by role** gives each depth's
workers a row, and the child swarms' reducers (`reducer (splits)`) their own. In the
timeline the children's lanes sit under their parent's, whose lane holds its split (the
blue tool call spans its children's time) and its own answer. Open worker 1's task cell:
its drill-down lists the `split_task` call and each child's answer.""")
    book.swarm(run, name=name)
    book.markdown("""While the cell runs, the live view shows the same tree: a child's row
appears under its parent when the split is made, with its own status, the parent reads
`running (split: 1/3 done)`, and the header counts splits and leaves done.

From Python the tree is in the records. `run.workers` holds the plan's workers; each one's
`children` holds its child workers (empty when it did not split), and `walk()` visits a
worker and every descendant, depth first:""")
    book.code("for top in _swarm.workers:\n    for worker in top.walk():\n"
              "        print(worker.id, worker.depth, worker.status, worker.task, sep=' | ')")
    book.markdown("""Each worker's figures are its *own* calls: its turns and, when it
split, its child swarm's reducer call (step `reducer-of-<id>`); its children's calls are
in their own records. So the run's cost is the sum over every worker of the tree plus the
planner and the final reducer:""")
    book.code("own = sum(w.cost_usd for top in _swarm.workers for w in top.walk())\n"
              "rest = sum(c.cost_usd for c in _swarm.calls if c.step in ('planner', "
              "'reducer'))\n"
              "print(own, '+', rest, '=', own + rest, '==', _swarm.cost_usd)")
    book.markdown("The split itself is a tool call of its parent, with the child swarm's "
                  "merged answer as its result:")
    book.code("print(_swarm.tables().tool_table())")
    book.markdown(f"""{LIVE_SWITCH}

Live, the model decides whether to split: the tool's description tells it when splitting
helps (a sub-task that is several independent pieces). A server without tool calling is
never offered the tool, and the run stays flat. The recording's `--base-url` (the fake
server) is left out of the cell, so it goes to OpenAI unless you pass `--base-url`.""")
    return book
