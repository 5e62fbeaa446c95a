"""Benchmark (not a test): the secret scrub on every reply, now against an earlier commit.

    python benchmarks/scrub.py [--against REV] [--repeats 5] [--scale N] [--quick]

``swarmkit.credentials.scrub`` runs on every reply, tool result and error a run takes
in, so what it costs is paid per call. REV's ``swarmkit/`` is unpacked into a scratch
folder (``git archive``), and two measurements alternate the two trees, each in fresh
processes with only that tree's swarmkit on PYTHONPATH:

- per reply: ``scrub()`` of a set of typical replies (a FakeServer worker reply, answers
  of 1.5 and 5 KB in prose and Markdown, a code answer, a reply holding a Bearer header),
  and a streamed 5 KB answer through ``StreamScrubber`` in 40-character pieces, with a
  key remembered as a run remembers its own; microseconds per reply, median of rounds.
  Where detect-secrets is installed, its default plugins' ``scan_line`` over the same
  replies is measured too (the kept rule set tried first: ``credentials/vendorkeys.py``).
- per call at scale (``--scale N``, default 10,000; 0 skips it): ``swarm_client.py
  --given-tasks`` (the client of ``run.py --scale``: N given tasks, no reducer) against
  one FakeServer process, CPU milliseconds per call of the whole client process.

It prints each side's figures and the ratios now / REV. The default REV is main before
issue 35 added the key shapes. Figures go in benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # the benchmark modules, then swarmkit itself

from common import KEY_ENV, ROOT, child_env, child_json, fake_server, new_history  # noqa: E402
from extras import machine_line  # noqa: E402

__all__ = ["main"]

BEFORE_SHAPES = "d726c9e"  # main before issue 35 (the scrub without the key shapes)

# Run in a child whose PYTHONPATH is one tree: prints {"name": microseconds per reply}.
PER_REPLY = r'''
import json, sys, time
from swarmkit.credentials.scrub import StreamScrubber, remember_secrets, scrub

loops = int(sys.argv[1])
remember_secrets(["sk-bench-key-0123456789abcdef"])  # a run remembers its own key
prose = ("Vector databases differ mainly in how they index embeddings: HNSW graphs, IVF "
         "lists or product quantisation, each trading recall for memory. ")
table = "| database | index | licence |\n|---|---|---|\n" + "| Qdrant | HNSW | Apache-2.0 |\n" * 8
code = ('client = OpenAI(api_key=os.environ["OPENAI_API_KEY"])\n'
        'reply = client.chat.completions.create(model="gpt-4.1-mini", messages=msgs)\n')
replies = {
    "worker reply (FakeServer)": "Result for worker-3: Summarise row 3 of the table in one "
                                 "sentence. (done)",
    "answer 1.5 KB": prose * 11,
    "answer 5 KB, Markdown": (prose * 15 + table) * 2,
    "code answer 2 KB": code * 14,
    "reply with a Bearer header": "the proxy said: Authorization: Bearer tok9f8e7d6c5b4a "
                                  + prose * 4,
}
result = {}
for name, text in replies.items():
    scrub(text)
    started = time.perf_counter()
    for _ in range(loops):
        scrub(text)
    result[name] = (time.perf_counter() - started) / loops * 1e6
streamed = replies["answer 5 KB, Markdown"]
pieces = [streamed[i:i + 40] for i in range(0, len(streamed), 40)]
started = time.perf_counter()
for _ in range(max(1, loops // 10)):
    scrubber = StreamScrubber()
    for piece in pieces:
        scrubber.feed(piece)
    scrubber.flush()
result["streamed 5 KB (40-char pieces)"] = ((time.perf_counter() - started)
                                            / max(1, loops // 10) * 1e6)
if "--detect-secrets" in sys.argv:
    try:
        from detect_secrets.core.scan import scan_line
        from detect_secrets.settings import default_settings
    except ImportError:
        pass
    else:
        with default_settings():
            for name in ("answer 1.5 KB", "answer 5 KB, Markdown"):
                lines = replies[name].splitlines()
                started = time.perf_counter()
                for _ in range(max(1, loops // 100)):
                    for line in lines:
                        list(scan_line(line))
                result[f"detect-secrets, {name}"] = ((time.perf_counter() - started)
                                                     / max(1, loops // 100) * 1e6)
print(json.dumps(result))
'''


def unpack(rev: str, into: Path) -> Path:
    """``swarmkit/`` as it is at ``rev``, under ``into``; the folder for PYTHONPATH."""
    archive = subprocess.run(["git", "archive", "--format=tar", rev, "swarmkit"], cwd=ROOT,
                             capture_output=True, check=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def _env(tree: Path) -> dict[str, str]:
    history = new_history()
    env = child_env(history)
    env["PYTHONPATH"] = str(tree)  # this tree's swarmkit alone
    return env


def per_reply(tree: Path, loops: int, detect: bool) -> dict[str, float]:
    argv = [sys.executable, "-c", PER_REPLY, str(loops), *(["--detect-secrets"] if detect
                                                          else [])]
    done = subprocess.run(argv, capture_output=True, text=True, env=_env(tree),
                          timeout=600, check=True)
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def per_call(tree: Path, url: str, n: int, concurrency: int) -> dict[str, Any]:
    argv = [str(HERE / "swarm_client.py"), "--base-url", url, "--workers", str(n),
            "--concurrency", str(concurrency), "--api-key-env", KEY_ENV, "--given-tasks",
            "--option", "reduce=false"]
    return child_json(argv, timeout=max(600.0, n / 20), tree=tree)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", default=BEFORE_SHAPES, help="the commit to compare with")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--loops", type=int, default=2000, help="scrubs per reply and round")
    parser.add_argument("--scale", type=int, default=10_000, help="N for the per-call run")
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--quick", action="store_true", help="a smoke run, not a figure")
    args = parser.parse_args()
    if args.quick:
        args.repeats, args.loops, args.scale, args.concurrency = 1, 50, 200, 20
    print(machine_line())
    with tempfile.TemporaryDirectory(prefix="swarmkit-scrub-") as scratch:
        trees = {"now": ROOT, args.against: unpack(args.against, Path(scratch))}
        replies: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
        calls: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
        for round_index in range(args.repeats):
            order = list(trees) if round_index % 2 == 0 else list(reversed(trees))
            for name in order:
                replies[name].append(per_reply(trees[name], args.loops,
                                               detect=name == "now"))
        if args.scale:
            with fake_server(0.0, args.scale) as url:
                for round_index in range(args.repeats):
                    order = list(trees) if round_index % 2 == 0 else list(reversed(trees))
                    for name in order:
                        calls[name].append(per_call(trees[name], url, args.scale,
                                                    args.concurrency))
    _report(args, replies, calls)


def _report(args: argparse.Namespace, replies: dict[str, list[dict[str, float]]],
            calls: dict[str, list[dict[str, Any]]]) -> None:
    now, then = "now", args.against
    medians = {side: {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
               for side, rounds in replies.items()}
    print(f"scrub per reply, microseconds (median of {args.repeats} rounds of "
          f"{args.loops} scrubs each):")
    print(f"  {'reply':<42} {now:>10} {then:>10} {'now/' + then:>12}")
    for key, value in medians[now].items():
        if key.startswith("detect-secrets"):
            continue
        before = medians[then][key]
        print(f"  {key:<42} {value:>10.1f} {before:>10.1f} {value / before:>12.2f}")
    for key, value in medians[now].items():
        if key.startswith("detect-secrets"):
            plain = medians[now][key.removeprefix("detect-secrets, ")]
            print(f"  {key:<42} {value:>10.1f} {'':>10} {value / plain:>8.0f}x now's scrub")
    if not any(calls.values()):
        return
    cpu = {side: statistics.median(1000 * r["cpu"] / r["calls"] for r in runs)
           for side, runs in calls.items()}
    wall = {side: statistics.median(r["wall"] for r in runs) for side, runs in calls.items()}
    print(f"swarmkit.run, {args.scale:,} given tasks at concurrency {args.concurrency}, "
          f"no reducer, 0 ms server (median of {args.repeats}):")
    for side in (now, then):
        print(f"  {side:>8}: CPU {cpu[side]:.3f} ms per call, wall {wall[side]:.2f} s")
    print(f"   ratio now / {then}: CPU per call {cpu[now] / cpu[then]:.3f}, "
          f"wall {wall[now] / wall[then]:.3f}")


if __name__ == "__main__":
    main()
