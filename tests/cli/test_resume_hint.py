"""What ``jswarm`` says after Ctrl-C works as printed: the resume command it prints names
the endpoint, key variable and history the run needs, and continues the run; a resume
refused for its endpoint exits 2, as every refusal before a run does; and
``jswarm run --resume RUN`` needs no task."""

from __future__ import annotations

import json
import re
import shlex
import threading
from pathlib import Path

from swarmkit.testing import FakeReply, FakeRequest, FakeServer, default_reply, wait_until
from tests.cli.test_cli import common, interrupted, started, swarmkit_cli
from tests.support.fakekey import KEY_ENV


def test_the_printed_resume_command_continues_the_interrupted_run_as_printed(
    tmp_path: Path,
) -> None:
    history = str(tmp_path / "runs.db")
    stalling = threading.Event()
    stalling.set()

    def handler(request: FakeRequest) -> FakeReply:
        reply = default_reply(request, plan_tasks=4)
        if stalling.is_set() and request.step in ("worker-3", "worker-4"):
            return FakeReply(content=reply.content, latency=60)
        return reply

    with FakeServer(handler) as server:
        # Two at a time: workers 3 and 4 are asked only once 1 and 2 have finished in the
        # run, so the interrupt cannot catch a reply the server sent but the run not yet kept.
        process = started("run", "Four lakes", *common(server), "--workers", "4",
                          "--concurrency", "2", "--history-path", history, cwd=tmp_path)
        assert wait_until(lambda: server.count("worker-*") == 4)
        code, _, err = interrupted(process)
        assert code == 130, err
        said = err.strip().splitlines()[-1]
        hint = re.fullmatch(r"jswarm: interrupted; (jswarm resume .*) continues it", said)
        assert hint is not None, said
        words = shlex.split(hint.group(1))
        assert words[:2] == ["jswarm", "resume"]
        assert words[3:] == ["--base-url", server.base_url, "--api-key-env", KEY_ENV,
                             "--history-path", history]
        server.clear()
        stalling.clear()
        resumed = swarmkit_cli(*words[1:], cwd=tmp_path)
        assert resumed.returncode == 0, resumed.stderr
        # Only what the interrupt cut short: the two stalled workers and the reducer.
        assert sorted(r.step for r in server.requests) == ["reducer", "worker-3", "worker-4"]
    assert "completed" in resumed.stdout.splitlines()[0]


def test_a_resume_refused_for_its_endpoint_exits_2_with_the_fix(tmp_path: Path) -> None:
    history = ["--history-path", str(tmp_path / "h.db")]
    with FakeServer(plan_tasks=2) as server:
        first = swarmkit_cli("run", "Two lakes", *common(server), "--json", *history)
        run_id = json.loads(first.stdout)["run_id"]
        refused = swarmkit_cli("resume", run_id, *history)
        assert server.count() == 2 + 1 + 1  # the first run's calls only
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [
        f"jswarm: ConfigError: run {run_id} sends its calls to {server.base_url}, which this "
        "session has not used; to send your key there, pass --base-url with that URL (or "
        "with the endpoint you want)"]


def test_run_resume_without_a_task_takes_the_stored_one(tmp_path: Path) -> None:
    history = ["--history-path", str(tmp_path / "h.db")]
    with FakeServer(plan_tasks=3) as server:
        first = swarmkit_cli("run", "Three lakes", *common(server), "--json", *history)
        run_id = json.loads(first.stdout)["run_id"]
        server.clear()
        again = swarmkit_cli("run", *common(server), *history, "--resume", run_id[:6])
        assert server.count() == 0  # every call was answered before
    assert again.returncode == 0, again.stderr
    assert f"resumed: 4 from history, run {run_id}" in again.stdout
    neither = swarmkit_cli("run", "--model", "gpt-4.1-mini")
    assert neither.returncode == 2
    assert neither.stderr.splitlines() == [
        "jswarm: ConfigError: run: give the task (or - to read it from stdin), or --resume "
        "RUN to continue an earlier run"]

