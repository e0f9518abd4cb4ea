"""A run of the fleet keeps its budget across a recovery: what it spent before its worker was killed counts against
the budget the run was submitted with, so the recovered run stops where the run would have stopped uninterrupted,
not a budget's worth later. Real PostgreSQL, real worker processes killed with SIGKILL, a real model server on
127.0.0.1 whose every answer reports the same usage."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_server import LLMServer
from support.processes import user_env
from support.waiting import wait_for
from test_fleet import PROGRAM, _asked, _finished_steps, _in_group, _stop, _submit
from test_fleet_recover import start_worker

from crewpoint.tui.cli.fleet_engine import status

USAGE = {"prompt_tokens": 10, "completion_tokens": 100_000, "total_tokens": 100_010}
"""Each call: $0.06 at gpt-4o-mini's $0.60 per million output tokens (and a hundred-thousandth of a cent in)."""

BUDGET = "0.15"
"""Two calls and a half: a run counting from its start makes two calls and stops before the third (the first call
bounds the next at $0.06, and $0.12 + $0.06 is past $0.15); one counting from its recovery would make three."""


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        running.mode = "slow"
        running.delay = 1.5
        running.usage = dict(USAGE)
        yield running


def test_a_recovered_run_stops_at_its_budget_counting_what_it_spent_before_the_kill(
    pg_location: str, tmp_path: Path, server: LLMServer
) -> None:
    from crewpoint.providers.runs import read_runs

    (tmp_path / "crew_app.py").write_text(PROGRAM, encoding="utf-8")
    env = user_env(FLEET_TEST_LLM=server.base_url, OPENAI_API_KEY="sk-test")
    queued = _submit(pg_location, tmp_path, env, "crew_app.py:crew", "--input", "topic=t", "--budget", BUDGET)
    assert queued.returncode == 0, queued.stderr
    a = start_worker(pg_location, tmp_path, env)
    b: subprocess.Popen[bytes] | None = None
    try:

        def first_task_paid_on_a() -> bool:
            assert a.poll() is None
            job = status(pg_location)[1][0]
            return bool(job.lineage and _in_group(job.pid, a.pid) and _finished_steps(pg_location).get(job.lineage))

        wait_for(first_task_paid_on_a, "worker A's run checkpointed after its first paid task")
        os.killpg(a.pid, signal.SIGKILL)
        a.wait(timeout=30)
        done_before = _finished_steps(pg_location)
        server.delay = 0.1
        b = start_worker(pg_location, tmp_path, env)

        def ended() -> bool:
            assert b is not None and b.poll() is None
            return status(pg_location)[1][0].status in ("succeeded", "failed")

        wait_for(ended, "the recovered run ended on worker B", timeout=120)
    finally:
        _stop(a)
        if b is not None:
            _stop(b)
    job = status(pg_location)[1][0]
    said = (tmp_path / "worker-1.log").read_text(encoding="utf-8")
    assert job.status == "succeeded" and job.attempts == 2, said  # recovered once, and ended there
    assert list(done_before.values()) == [1]
    assert _finished_steps(pg_location) == {job.lineage: 2}  # where an uninterrupted run stops, not a task later
    record = next(r for r in read_runs(pg_location) if r.lineage == job.lineage)
    assert record.status == "budget"
    assert "stopped at its budget: spent $0.1200 and 200,020 tokens of $0.1500" in said, (
        said
    )  # the earlier spend counted
    asked = _asked(server)
    assert asked["step 3 of t"] == 0 and asked["step 4 of t"] == 0, asked
