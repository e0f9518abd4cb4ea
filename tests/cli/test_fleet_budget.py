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
from support.fleet import (
    checkpointed_on,
    finished_steps,
    kill_worker,
    model_calls,
    program_env,
    start_worker,
    submit_run,
)
from support.waiting import wait_for

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

    env = program_env(tmp_path, server)
    queued = submit_run(pg_location, tmp_path, env, "crew_app.py:crew", "--input", "topic=t", "--budget", BUDGET)
    assert queued.returncode == 0, queued.stderr
    a = start_worker(pg_location, tmp_path, env)
    b: subprocess.Popen[bytes] | None = None
    try:
        checkpointed_on(pg_location, a)
        os.killpg(a.pid, signal.SIGKILL)
        a.wait(timeout=30)
        done_before = finished_steps(pg_location)
        server.delay = 0.1
        b = start_worker(pg_location, tmp_path, env)

        def ended() -> bool:
            assert b is not None and b.poll() is None
            return status(pg_location)[1][0].status in ("succeeded", "failed")

        wait_for(ended, "the recovered run ended on worker B", timeout=120)
    finally:
        kill_worker(a)
        if b is not None:
            kill_worker(b)
    job = status(pg_location)[1][0]
    said = (tmp_path / "worker-1.log").read_text(encoding="utf-8")
    assert job.status == "succeeded" and job.attempts == 2, said  # recovered once, and ended there
    assert list(done_before.values()) == [1]
    assert finished_steps(pg_location) == {job.lineage: 2}  # where an uninterrupted run stops, not a task later
    record = next(r for r in read_runs(pg_location) if r.lineage == job.lineage)
    assert record.status == "budget"
    assert "stopped at its budget: spent $0.1200 and 200,020 tokens of $0.1500" in said, (
        said
    )  # the earlier spend counted
    asked = model_calls(server)
    assert asked["step 3 of t"] == 0 and asked["step 4 of t"] == 0, asked
