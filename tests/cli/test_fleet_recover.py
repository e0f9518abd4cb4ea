"""A run of the fleet recovered after its worker died, when the program changed since its checkpoint: the worker's
``--recover`` decides (rerun the changed tasks, keep their saved outputs, or refuse), and the plan is in the worker's
log. A run whose model keeps failing ends failed with the reason, once. Real PostgreSQL, real worker processes killed
with SIGKILL, a real model server on 127.0.0.1."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_server import LLMServer
from support.fleet import (
    PROGRAM,
    checkpointed_on,
    finished_steps,
    kill_worker,
    model_calls,
    start_worker,
    submit_run,
    submitted,
)
from support.processes import user_env
from support.waiting import wait_for

from crewpoint.tui.cli.fleet_engine import status

CHANGED = PROGRAM.replace('expected_output="text"', 'expected_output="plain text" if i == 1 else "text"')
"""The program with its first task's expected output changed."""


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        running.mode = "slow"
        running.delay = 0.5
        yield running


@pytest.mark.parametrize("recover", ["rerun", "keep", "strict"])
def test_a_recovered_run_whose_program_changed_follows_recover(
    pg_location: str, tmp_path: Path, server: LLMServer, recover: str
) -> None:
    program = tmp_path / "crew_app.py"
    program.write_text(PROGRAM, encoding="utf-8")
    env = user_env(FLEET_TEST_LLM=server.base_url, OPENAI_API_KEY="sk-test")
    assert submit_run(pg_location, tmp_path, env, "crew_app.py:crew", "--input", "topic=t").returncode == 0
    a = start_worker(pg_location, tmp_path, env)
    b: subprocess.Popen[bytes] | None = None
    try:
        checkpointed_on(pg_location, a)
        os.killpg(a.pid, signal.SIGKILL)
        a.wait(timeout=30)
        before = model_calls(server)
        program.write_text(CHANGED, encoding="utf-8")  # the program changed before the run is recovered
        b = start_worker(pg_location, tmp_path, env, "--recover", recover)

        def ended() -> bool:
            assert b is not None and b.poll() is None
            return status(pg_location)[1][0].status in ("succeeded", "failed")

        wait_for(ended, "the recovered run ended on worker B", timeout=120)
    finally:
        kill_worker(a)
        if b is not None:
            kill_worker(b)
    job = status(pg_location)[1][0]
    asked = model_calls(server)
    said = (tmp_path / "worker-1.log").read_text(encoding="utf-8")
    assert before["step 1 of t"] == 1
    if recover == "strict":
        assert job.status == "failed"
        assert "--recover strict refuses it" in said and "(s1: changed)" in said, said
        assert asked == before  # nothing of the run went on
        return
    assert job.status == "succeeded", said
    assert finished_steps(pg_location) == {job.lineage: 4}
    assert "recover: the program changed since checkpoint" in said and f"(--recover {recover})" in said, said
    if recover == "rerun":
        assert "s1: changed, runs" in said
        assert asked["step 1 of t"] == 2  # the changed task ran again
    else:
        assert "s1: changed, saved output kept" in said
        assert asked["step 1 of t"] == 1  # its saved output was used


def test_a_run_whose_model_keeps_failing_ends_failed_with_the_reason_and_is_not_run_again(
    pg_location: str, tmp_path: Path, server: LLMServer
) -> None:
    server.mode = "always_fail"
    server.fail_status = 503
    env = submitted(pg_location, tmp_path, server)
    worker = start_worker(pg_location, tmp_path, env)
    said = tmp_path / "worker-0.log"
    try:
        wait_for(lambda: "job 1 failed" in said.read_text(encoding="utf-8"), "the worker saying the run failed")
        server.mode = "echo"  # the model answers now: a run put back in the queue would finish
        assert submit_run(pg_location, tmp_path, env, "crew_app.py:crew", "--input", "topic=u").returncode == 0
        wait_for(lambda: status(pg_location)[1][0].status == "succeeded", "the next job finished on the same worker")
    finally:
        kill_worker(worker)
    failed = [j for j in status(pg_location)[1] if j.id == 1]
    assert [(j.status, j.attempts) for j in failed] == [("failed", 1)]  # ended once, never queued again
    assert model_calls(server)["step 1 of t"] == 5  # the first task's call, tried five times, nothing after it
    assert not any(key.endswith(" of t") and not key.startswith("step 1 ") for key in model_calls(server))
    line = next(line for line in said.read_text(encoding="utf-8").splitlines() if "job 1 failed" in line)
    assert "HTTP 503" in line and "gave up after 5 tries" in line, line
