"""Two answers to one waiting run of the fleet at the same moment: two real ``crewpoint checkpoint answer``
processes, released together. One wins and queues the run's continuation; the other is refused in one line naming
who answered, and queues nothing: one continuation runs, each task's model calls made once. Real PostgreSQL, a real
worker process, a real model server on 127.0.0.1."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_server import LLMServer
from support.processes import user_env
from support.waiting import wait_for
from test_answer_race import ANSWERER
from test_fleet import _asked, _finished_steps, _stop
from test_fleet_answer import waiting_on_the_fleet

from crewpoint.tui.cli.fleet_engine import status


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        yield running


def race(command: list[str], cwd: Path, env: dict[str, str], who: tuple[str, ...]) -> list[tuple[str, int, str, str]]:
    """``crewpoint checkpoint COMMAND...`` in a process for each of ``who`` (its login name), released together:
    who, exit code, stdout and stderr of each."""
    ready_read, ready_write = os.pipe()
    go_read, go_write = os.pipe()
    procs: list[tuple[str, subprocess.Popen[str]]] = []
    try:
        for name in who:
            argv = [sys.executable, "-c", ANSWERER, str(ready_write), str(go_read), "checkpoint", *command]
            mine = {**env, "USER": name, "LOGNAME": name}
            proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=mine,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                pass_fds=(ready_write, go_read),
            )
            procs.append((name, proc))
        os.close(ready_write)
        os.close(go_read)
        seen = b""
        while len(seen) < len(procs):  # each answer says it is ready; end of file if one died first
            got = os.read(ready_read, 1)
            if not got:
                break
            seen += got
    finally:
        os.close(go_write)  # both answers go at once
        os.close(ready_read)
    ended = []
    for name, proc in procs:
        out, err = proc.communicate(timeout=120)
        ended.append((name, proc.returncode, out, err))
    assert len(seen) == len(procs), ended
    return ended


def test_two_answers_at_once_queue_one_continuation_and_the_other_is_told_who_won(
    pg_location: str, tmp_path: Path, server: LLMServer
) -> None:
    env = user_env(FLEET_TEST_LLM=server.base_url, OPENAI_API_KEY="sk-test")
    worker, command = waiting_on_the_fleet(pg_location, tmp_path, env)
    try:
        args = [*shlex.split(command)[2:], "--accept"]  # answer ID --location … --app … --accept
        ended = race(args, tmp_path, env, ("alice", "bob"))
        assert not [e for e in ended if "Traceback" in e[3]], ended
        won = [e for e in ended if e[1] == 0]
        lost = [e for e in ended if e[1] != 0]
        assert len(won) == 1 and len(lost) == 1, ended
        (winner, _, out, _), (loser, code, _, err) = won[0], lost[0]
        assert out.startswith("queued job 2: "), out
        assert code == 2, err
        assert len(err.strip().splitlines()) == 1, err
        assert f"already answered by {winner}@" in err and f"{loser}@" not in err, err
        assert "job 2 of the fleet goes on with it" in err or "its run goes on on the fleet" in err, err

        def finished() -> bool:
            assert worker.poll() is None
            jobs = status(pg_location)[1]
            assert not [j for j in jobs if j.status == "failed"], jobs
            return all(j.status == "succeeded" for j in jobs) and _finished_steps(pg_location) == {jobs[0].lineage: 4}

        wait_for(finished, "the one continuation finished on the worker", timeout=120)
    finally:
        _stop(worker)
    jobs = status(pg_location)[1]
    assert [j.id for j in jobs] == [2, 1]  # one continuation queued, beside the job that started the run
    assert all(n == 1 for n in _asked(server).values()) and len(_asked(server)) == 4, _asked(server)
