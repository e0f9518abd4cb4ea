"""Two answers to one waiting run of the fleet at the same moment: two real ``crewpoint checkpoint answer``
processes, released together. One wins and queues the run's continuation; the other is refused in one line naming
who answered, and queues nothing: one continuation runs, each task's model calls made once. Real PostgreSQL, a real
worker process, a real model server on 127.0.0.1."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_server import LLMServer
from support.fleet import finished_steps, kill_worker, model_calls, pasted
from support.processes import user_env
from support.races import released_together
from support.waiting import wait_for
from test_fleet_answer import waiting_on_the_fleet

from crewpoint.tui.cli.fleet_engine import status


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        yield running


def test_two_answers_at_once_queue_one_continuation_and_the_other_is_told_who_won(
    pg_location: str, tmp_path: Path, server: LLMServer
) -> None:
    env = user_env(FLEET_TEST_LLM=server.base_url, OPENAI_API_KEY="sk-test")
    worker, command = waiting_on_the_fleet(pg_location, tmp_path, env)
    try:
        args = [*shlex.split(command)[2:], "--accept"]  # answer ID --location … --app … --accept
        ended = released_together({"alice": ["checkpoint", *args], "bob": ["checkpoint", *args]}, tmp_path, env)
        assert not [e for e in ended if "Traceback" in e.stderr], ended
        won = [e for e in ended if e.returncode == 0]
        lost = [e for e in ended if e.returncode != 0]
        assert len(won) == 1 and len(lost) == 1, ended
        winner, loser, out, code, err = won[0].who, lost[0].who, won[0].stdout, lost[0].returncode, lost[0].stderr
        assert out.startswith("queued job 2: "), out
        assert code == 2, err
        assert len(err.strip().splitlines()) == 1, err
        assert f"already answered by {winner}@" in err and f"{loser}@" not in err, err
        assert "job 2 of the fleet goes on with it" in err or "its run goes on on the fleet" in err, err
        shown = pasted(err.strip().partition("; watch it with: ")[2], tmp_path, env)  # the refusal's command
        assert shown.returncode == 0, shown.stderr
        assert any(line.split()[:1] == ["2"] for line in shown.stdout.splitlines()), shown.stdout

        def finished() -> bool:
            assert worker.poll() is None
            jobs = status(pg_location)[1]
            assert not [j for j in jobs if j.status == "failed"], jobs
            return all(j.status == "succeeded" for j in jobs) and finished_steps(pg_location) == {jobs[0].lineage: 4}

        wait_for(finished, "the one continuation finished on the worker", timeout=120)
    finally:
        kill_worker(worker)
    jobs = status(pg_location)[1]
    assert [j.id for j in jobs] == [2, 1]  # one continuation queued, beside the job that started the run
    assert all(n == 1 for n in model_calls(server).values()) and len(model_calls(server)) == 4, model_calls(server)
