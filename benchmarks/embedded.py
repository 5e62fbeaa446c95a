"""Issue 24: 8 workers on the embedded model, side by side with a plain client and the
one-slot server it replaced.

    python benchmarks/embedded.py            # 5 alternating rounds at 96 max tokens (~3 min)
    python benchmarks/embedded.py --quick    # 1 round at 16 max tokens: checks the script works
    python benchmarks/embedded.py --llama-cpp-python /path/to/python   # where (b)'s server is

The same 8 worker requests (given tasks, no reducer, cache and history off, temperature
0, a fixed max tokens), each round in alternating order, against three servers started
before the clock and warmed up with one request each:

  (c) ``swarmkit.run(model="local", tasks=[8], reduce=False, concurrency=8)``: the
      embedded server, ``local_server(8)`` (xllamacpp, 8 slots), started the way a run
      starts it;
  (a) a plain client: one ``openai.AsyncOpenAI`` (its default transport), ``asyncio.gather``
      of ``chat.completions.create`` with the bodies swarmkit sends (built with
      ``worker_messages`` and ``build_request`` from the run's SwarmConfig, the embedded
      model's penalties included), at the same server;
  (b) the same plain client at llama-cpp-python's ``python -m llama_cpp.server``, started
      as the old embedded.py started it (one request at a time);
  (r) the same plain client at ``LocalModelServer(slots=1)`` (xllamacpp, 1 slot), for
      reference.

Every variant runs in this process (the servers are child processes): the clients' CPU
is small next to the model's, and is reported. Ratios are of median walls: (c)/(a)
(target <= 1.10) and (c)/(b) (target <= 0.45). Then each server's peak RSS (VmHWM).
``(b)`` is skipped, with a note, when its interpreter cannot import ``llama_cpp.server``
(``--llama-cpp-python``, or the variable SWARMKIT_BENCH_LLAMA_CPP_PYTHON, names another).
See benchmarks/README.md, "Embedded model (issue 24)".
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT)]  # the benchmark modules, then swarmkit itself

import openai  # noqa: E402
from common import new_history  # noqa: E402
from extras import machine_line  # noqa: E402

import swarmkit  # noqa: E402
import swarmkit.api  # noqa: E402  (the modules a run uses, imported before the clock)
import swarmkit.provider  # noqa: E402
from swarmkit.config.prompts import LOCAL_SYSTEM_PROMPT  # noqa: E402
from swarmkit.config.swarmconfig import LOCAL_MODEL, SwarmConfig  # noqa: E402
from swarmkit.engine.budgetedcalls import build_request  # noqa: E402
from swarmkit.engine.worker import worker_messages  # noqa: E402
from swarmkit.provider.embedded import (  # noqa: E402
    LocalModelServer,
    gguf_path,
    local_server,
)

__all__ = ["TASK", "TASKS", "main"]

TASK = "Write a short guide to starting a small vegetable garden."
TASKS = (
    "Choose a sunny spot for the beds.",
    "Prepare the soil before planting.",
    "Pick five easy vegetables for a beginner.",
    "Plan how and when to water.",
    "Keep weeds under control.",
    "Protect the plants from common pests.",
    "Know when each vegetable is ready to harvest.",
    "Save seeds for next year.",
)
SLOTS = 8
STARTUP_SECONDS = 120.0
LLAMA_CPP_ENV = "SWARMKIT_BENCH_LLAMA_CPP_PYTHON"

# The old embedded.py's launcher (git show 023d4ae:swarmkit/provider/embedded.py): it
# drops the variables the server would read as settings, exits with its parent, then
# runs ``python -m llama_cpp.server`` with the flags that follow it. With
# BENCH_NO_EXTRA_BUFTS set it first turns off llama.cpp's extra weight buffer types
# (``use_extra_bufts``, which the server has no flag for): a build compiled with
# -march=native on a CPU that reports AMX repacks the weights for AMX, and on a VM that
# does not let a process use the AMX tiles, its first matrix product dies with SIGILL.
_OLD_LAUNCHER = """\
import os, runpy, threading, time
from llama_cpp.server.settings import ConfigFileSettings, Settings
names = {*Settings.model_fields, *ConfigFileSettings.model_fields, "config_file"}
for key in [k for k in os.environ if k.lower() in names]:
    del os.environ[key]
parent = int(os.environ.pop("BENCH_PARENT_PID"))
def exit_with_parent():
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(0)
threading.Thread(target=exit_with_parent, daemon=True).start()
if os.environ.pop("BENCH_NO_EXTRA_BUFTS", ""):  # weights in plain CPU buffers (no AMX)
    import llama_cpp.llama_cpp as lib
    defaults = lib.llama_model_default_params
    def model_params():
        params = defaults()
        params.use_extra_bufts = False
        return params
    lib.llama_model_default_params = model_params
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""

_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def run_options(max_tokens: int) -> dict[str, Any]:
    """The options of the measured swarm; the plain client's bodies come from them too."""
    return {"model": LOCAL_MODEL, "tasks": list(TASKS), "workers": len(TASKS),
            "concurrency": SLOTS, "reduce": False, "cache": False, "history": False,
            "temperature": 0, "max_tokens": max_tokens}


def sent_config(max_tokens: int) -> SwarmConfig:
    """The config whose worker requests the swarm sends: the embedded model's workers get
    its small-model prompt in place of the default (``swarmkit.api.resolve_models``)."""
    return SwarmConfig.from_options(**run_options(max_tokens),
                                    system_prompt=LOCAL_SYSTEM_PROMPT)


def request_bodies(max_tokens: int) -> list[dict[str, Any]]:
    """The 8 worker request bodies swarmkit sends for :func:`run_options`."""
    config = sent_config(max_tokens)
    return [build_request(config, "worker", worker_messages(
        config.system_prompt, TASK, index, subtask, len(TASKS), config.output_schema)).body()
        for index, subtask in enumerate(TASKS, start=1)]


def fingerprints(max_tokens: int) -> set[str]:
    config = sent_config(max_tokens)
    return {build_request(config, "worker", worker_messages(
        config.system_prompt, TASK, index, subtask, len(TASKS), config.output_schema)
    ).fingerprint() for index, subtask in enumerate(TASKS, start=1)}


# --- the servers ----------------------------------------------------------------------


class OldServer:
    """llama-cpp-python's server, one request at a time, as the old embedded.py ran it."""

    def __init__(self, python: str, log: Path, threads: int | None,
                 no_extra_bufts: bool = False) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = int(probe.getsockname()[1])
        command = [python, "-c", _OLD_LAUNCHER, "--model", str(gguf_path()),
                   "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", "8192",
                   "--model_alias", LOCAL_MODEL, "--interrupt_requests", "False",
                   "--logits_all", "False", "--flash_attn", "True"]
        if threads is not None:
            command += ["--n_threads", str(threads)]
        self.log = log
        env = {**os.environ, "BENCH_PARENT_PID": str(os.getpid())}
        if no_extra_bufts:
            env["BENCH_NO_EXTRA_BUFTS"] = "1"
        self.no_extra_bufts = no_extra_bufts
        with log.open("ab") as out:
            self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out,
                                            stderr=subprocess.STDOUT, env=env,
                                            start_new_session=True)
        deadline = time.monotonic() + STARTUP_SECONDS
        while not _answers(self.base_url):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                tail = log.read_text(errors="replace")[-800:]
                raise RuntimeError(f"llama_cpp.server did not start: {tail}")
            time.sleep(0.1)
        self.start_rss = memory_mib(self.pid)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_old_server(python: str, log: Path, threads: int | None, warm: dict[str, Any]
                     ) -> tuple[OldServer, str | None]:
    """(b)'s server, started as the old embedded.py started it and warmed up with one
    request; if that request kills it with SIGILL (see _OLD_LAUNCHER), started again
    with llama.cpp's extra buffer types off. Returns the server and a note, if any."""
    server = OldServer(python, log, threads)
    try:
        plain_sample(server.base_url, [warm])
        return server, None
    except openai.APIConnectionError:
        time.sleep(0.5)
        code = server.process.poll()
        server.stop()
        if code != -signal.SIGILL:
            raise
    server = OldServer(python, log, threads, no_extra_bufts=True)
    plain_sample(server.base_url, [warm])
    return server, ("its first request killed it with SIGILL (llama.cpp's AMX kernels in "
                    "this -march=native build; the VM does not allow AMX tiles), so it "
                    "runs with use_extra_bufts=False: the weights in plain CPU buffers")


def _answers(base_url: str) -> bool:
    try:
        with _opener.open(f"{base_url}/models", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def llama_cpp_server_missing(python: str) -> str | None:
    """Why ``python`` cannot run ``python -m llama_cpp.server``, or None if it can."""
    done = subprocess.run([python, "-c", "import llama_cpp.server.app"], capture_output=True,
                          text=True, timeout=120, check=False)
    if done.returncode == 0:
        return None
    lines = (done.stderr.strip() or "it failed").splitlines()
    return f"{python} cannot import llama_cpp.server ({lines[-1]})"


def memory_mib(pid: int) -> dict[str, float]:
    """VmHWM (peak resident set) and VmRSS of process ``pid``, in MiB (Linux)."""
    found: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmHWM", "VmRSS"):
            found[key] = int(value.split()[0]) / 1024
    return found


# --- the clients ----------------------------------------------------------------------


@dataclass
class Variant:
    """The repeated measurements of one variant."""

    key: str
    name: str
    samples: list[dict[str, float]] = field(default_factory=list)

    def median(self, name: str) -> float:
        return statistics.median(s[name] for s in self.samples)

    @property
    def wall(self) -> float:
        return self.median("wall")


async def _plain(base_url: str, bodies: list[dict[str, Any]]) -> dict[str, float]:
    t0 = time.perf_counter()
    client = openai.AsyncOpenAI(base_url=base_url, api_key="none", max_retries=0)

    async def one(body: dict[str, Any]) -> tuple[int, float]:
        response = await client.chat.completions.create(**body)
        usage = response.usage
        return (usage.completion_tokens if usage else 0), time.perf_counter() - t0

    try:
        done = await asyncio.gather(*(one(body) for body in bodies))
    finally:
        await client.close()
    ends = [end for _, end in done]
    return {"tokens": sum(tokens for tokens, _ in done), "first": min(ends), "last": max(ends)}


def plain_sample(base_url: str, bodies: list[dict[str, Any]]) -> dict[str, float]:
    return _timed(lambda: _plain(base_url, bodies))


async def _swarm(options: dict[str, Any], expected: set[str], base_url: str
                 ) -> dict[str, float]:
    run = await swarmkit.run(TASK, **options)
    if run.status != "completed":
        raise RuntimeError(f"the swarm did not complete: {run.status}")
    served = run.config.get("worker", {}).get("base_url")
    if served != base_url:
        raise RuntimeError(f"the swarm ran at {served}, not at the embedded server {base_url}")
    sent = {call.fingerprint for call in run.calls}
    if sent != expected:
        raise RuntimeError("swarmkit's worker requests differ from the plain client's bodies")
    ends = [call.started + call.latency for call in run.calls]
    tokens = sum(call.usage.completion_tokens or 0 for call in run.calls)
    return {"tokens": tokens, "first": min(ends), "last": max(ends)}


def swarm_sample(options: dict[str, Any], expected: set[str], base_url: str
                 ) -> dict[str, float]:
    return _timed(lambda: _swarm(options, expected, base_url))


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _timed(make: Callable[[], Awaitable[dict[str, float]]]) -> dict[str, float]:
    """One sample: the coroutine's wall and this process's CPU (the servers' is not in it)."""

    async def clocked() -> dict[str, float]:
        cpu0, t0 = _cpu(), time.perf_counter()
        result = await make()
        return {**result, "wall": time.perf_counter() - t0, "cpu": _cpu() - cpu0}

    return asyncio.run(clocked())


# --- the report -----------------------------------------------------------------------


def _ratio(a: Variant, b: Variant | None) -> str:
    if b is None or not b.samples:
        return "n/a"
    return f"{a.wall / b.wall:.2f}"


def print_table(variants: dict[str, Variant], max_tokens: int) -> None:
    rounds = len(variants["c"].samples)
    print(f"\n8 workers on the embedded model: given tasks, no reducer, cache and history off, "
          f"temperature 0, {max_tokens} max tokens (median of {rounds} "
          f"round{'s' if rounds != 1 else ''}, alternating order)")
    print(f"  {'variant':<54} {'wall s':>7} {'min-max s':>11} {'tokens':>6} {'tokens/s':>8} "
          f"{'1st/last answer s':>17} {'client CPU s':>12}")
    for variant in variants.values():
        if not variant.samples:
            continue
        walls = [s["wall"] for s in variant.samples]
        rate = statistics.median(s["tokens"] / s["wall"] for s in variant.samples)
        answers = f"{variant.median('first'):.2f}/{variant.median('last'):.2f}"
        print(f"  {f'({variant.key}) {variant.name}':<54} {variant.wall:>7.2f} "
              f"{f'{min(walls):.2f}-{max(walls):.2f}':>11} {variant.median('tokens'):>6.0f} "
              f"{rate:>8.1f} {answers:>17} {variant.median('cpu'):>12.2f}")
    c = variants["c"]
    print(f"  ratio (c)/(a) swarmkit / plain client, same 8 slots: {_ratio(c, variants['a'])}"
          "   target <= 1.10")
    old = variants.get("b")
    print(f"  ratio (c)/(b) swarmkit on 8 slots / llama-cpp-python one-slot server: "
          f"{_ratio(c, old) if old is not None else 'n/a (skipped)'}   target <= 0.45")
    print(f"  ratio (c)/(r) swarmkit on 8 slots / xllamacpp 1 slot (reference): "
          f"{_ratio(c, variants['r'])}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="1 round at 16 max tokens: a smoke run, not a figure")
    parser.add_argument("--repeats", type=int, default=None, help="rounds (5; --quick: 1)")
    parser.add_argument("--max-tokens", type=int, default=None, help="96 (--quick: 16)")
    parser.add_argument("--llama-cpp-python", default=os.environ.get(LLAMA_CPP_ENV),
                        metavar="PYTHON", help="the interpreter that runs llama-cpp-python's "
                        f"server for (b) (default: ${LLAMA_CPP_ENV}, else this one)")
    parser.add_argument("--llama-cpp-threads", type=int, default=None,
                        help="--n_threads for (b)'s server (default: its own, as the old "
                        "embedded.py left it: half the cores)")
    parser.add_argument("--no-llama-cpp-python", action="store_true", help="skip (b)")
    parser.add_argument("--threads", type=int, default=None,
                        help="n_threads for the xllamacpp servers (default: LocalModelServer's "
                        "own, and (c) through local_server(8); with it, (c) gets the "
                        "8-slot server's base_url)")
    args = parser.parse_args(argv)
    repeats = args.repeats or (1 if args.quick else 5)
    max_tokens = args.max_tokens or (16 if args.quick else 96)
    old_python = args.llama_cpp_python or sys.executable

    started = time.perf_counter()
    print(machine_line())
    scratch = new_history().parent
    os.chdir(scratch)  # the embedded server's log (.swarmkit/) lands here, not in the checkout
    skip_old = "--no-llama-cpp-python was given" if args.no_llama_cpp_python else (
        llama_cpp_server_missing(old_python))

    bodies = request_bodies(max_tokens)
    expected = fingerprints(max_tokens)
    options = run_options(max_tokens)
    print("starting the servers (outside the clock) ...", file=sys.stderr, flush=True)
    if args.threads is None:
        eight = local_server(SLOTS)  # the process's embedded server, as swarmkit.run starts it
    else:  # a server of its own: swarmkit.run gets its base_url (model "local" all the same)
        eight = LocalModelServer(slots=SLOTS, n_threads=args.threads,
                                 log_path=scratch / "eight-slots.log").start()
        options["base_url"] = eight.base_url
    one = LocalModelServer(slots=1, n_threads=args.threads,
                           log_path=scratch / "one-slot.log").start()
    start_rss = {"8": memory_mib(eight.pid or 0), "1": memory_mib(one.pid or 0)}
    # Warm-up, outside the clock: one request at each server (swarmkit's one-task run at
    # the 8-slot server also warms its own code paths; the first plain call imports the
    # SDK's HTTP stack).
    warm = {**bodies[0], "max_tokens": 8}
    old, old_note = None, None
    try:
        plain_sample(one.base_url, [warm])
        if not skip_old:
            old, old_note = start_old_server(old_python, scratch / "llama-cpp-python.log",
                                             args.llama_cpp_threads, warm)
            start_rss["old"] = old.start_rss
        asyncio.run(swarmkit.run(TASK, **{**options, "tasks": [TASKS[0]], "workers": 1,
                                          "max_tokens": 8}))
        plain_sample(eight.base_url, [warm])

        variants = {
            "c": Variant("c", "swarmkit.run, xllamacpp 8 slots"),
            "a": Variant("a", "plain AsyncOpenAI gather, xllamacpp 8 slots"),
            "b": Variant("b", "plain AsyncOpenAI gather, llama-cpp-python server"),
            "r": Variant("r", "plain AsyncOpenAI gather, xllamacpp 1 slot"),
        }
        runners: dict[str, Callable[[], dict[str, float]]] = {
            "c": lambda: swarm_sample(options, expected, eight.base_url),
            "a": lambda: plain_sample(eight.base_url, bodies),
            "r": lambda: plain_sample(one.base_url, bodies),
        }
        if old is not None:
            runners["b"] = lambda: plain_sample(old.base_url, bodies)
        else:
            del variants["b"]
        order = list(runners)
        print(f"measuring {repeats} round(s) ", end="", flush=True, file=sys.stderr)
        for index in range(repeats):
            for key in order if index % 2 == 0 else order[::-1]:
                variants[key].samples.append(runners[key]())
                print(".", end="", flush=True, file=sys.stderr)
        print(file=sys.stderr)
        peak = {"8": memory_mib(eight.pid or 0), "1": memory_mib(one.pid or 0)}
        if old is not None:
            peak["old"] = memory_mib(old.pid)
    finally:
        one.stop()
        if old is not None:
            old.stop()
        eight.stop()

    print(f"  request bodies: swarmkit's 8 worker requests are the plain client's, "
          f"byte for byte (fingerprints checked each round): {json.dumps(bodies[0])[:160]}...")
    if skip_old:
        print(f"  (b) llama-cpp-python server: skipped: {skip_old}")
    else:
        threads = (f"--n_threads {args.llama_cpp_threads}" if args.llama_cpp_threads else
                   "its default threads (half the cores for generation)")
        print(f"  (b) llama-cpp-python server: the old embedded.py's command line, {threads}"
              f"{'; ' + old_note if old_note else ''}")
    print_table(variants, max_tokens)
    threads = int(eight.command(gguf_path(), 0)[-2])  # the launcher's n_threads argument
    print(f"  xllamacpp servers: {threads} thread{'s' if threads != 1 else ''} each"
          f"{'' if args.threads else ' (LocalModelServer default)'}; (c) "
          f"{'through local_server(8)' if args.threads is None else 'at its base_url'}")
    names = {"8": f"xllamacpp {SLOTS} slots", "1": "xllamacpp 1 slot",
             "old": "llama-cpp-python server (n_ctx 8192)"}
    memory = ", ".join(f"{names[k]} {peak[k]['VmHWM']:.0f} MiB (just started: "
                       f"{start_rss[k]['VmRSS']:.0f})" for k in peak)
    print(f"  server peak RSS (VmHWM): {memory}")
    print(f"  load average at the end: {os.getloadavg()[0]:.1f}")
    print(f"\n(benchmark took {time.perf_counter() - started:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
