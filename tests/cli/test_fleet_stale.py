"""A worker that lost a job never ends or requeues it over the worker that took it: worker A is stopped (SIGSTOP)
mid-run past the stalled limit, worker B takes the job and runs it, then A goes on (SIGCONT) while B still runs it.
A's child finds its run gone and writes nothing; A leaves the job as it is, and the job's history has the one
hand-back to B and B's end. Real PostgreSQL, real worker processes, real signals, a real model server on
127.0.0.1."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_server import LLMServer
from support.fleet import checkpointed_on, finished_steps, in_group, kill_worker, start_worker, submitted
from support.waiting import wait_for

from crewpoint.tui.cli.fleet_engine import connect, status


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        running.mode = "slow"
        running.delay = 0.6
        yield running


def history(location: str, job_id: int) -> list[str]:
    """What happened to the job, in order (procrastinate's events: deferred, started, deferred_for_retry, …)."""
    with connect(location) as conn:
        rows = conn.execute("SELECT type::text FROM procrastinate_events WHERE job_id = %s ORDER BY id", (job_id,))
        return [str(r[0]) for r in rows.fetchall()]


def test_a_worker_that_lost_its_job_leaves_it_to_the_worker_that_runs_it(
    pg_location: str, tmp_path: Path, server: LLMServer
) -> None:
    env = submitted(pg_location, tmp_path, server)
    a = start_worker(pg_location, tmp_path, env)
    b: subprocess.Popen[bytes] | None = None
    said_a = tmp_path / "worker-0.log"
    try:
        checkpointed_on(pg_location, a)
        os.killpg(a.pid, signal.SIGSTOP)  # cut off: alive, silent
        server.delay = 3.0  # B's tasks take long enough for A to come back while B runs the job
        b = start_worker(pg_location, tmp_path, env)

        def running_on_b() -> bool:
            assert b is not None and b.poll() is None
            job = status(pg_location)[1][0]
            return job.status == "doing" and in_group(job.pid, b.pid)

        wait_for(running_on_b, "worker B running the job")
        os.killpg(a.pid, signal.SIGCONT)
        wait_for(lambda: "this worker leaves it as it is" in said_a.read_text(encoding="utf-8"), "A leaving the job")
        job = status(pg_location)[1][0]
        assert job.status == "doing" and in_group(job.pid, b.pid), job  # still B's, running
        server.delay = 0.1
        wait_for(lambda: status(pg_location)[1][0].status == "succeeded", "the job finished on B", timeout=120)
    finally:
        os.killpg(a.pid, signal.SIGCONT)
        kill_worker(a)
        if b is not None:
            kill_worker(b)
    said = said_a.read_text(encoding="utf-8")
    assert "job 1: this worker lost the run's lock" in said, said
    # A's child started it, B's recovery handed it back once, B's child ran it to its end: nothing of A's after
    seen = history(pg_location, 1)
    assert seen == ["deferred", "started", "scheduled", "deferred_for_retry", "started", "succeeded"], seen
    assert finished_steps(pg_location) == {status(pg_location)[1][0].lineage: 4}
