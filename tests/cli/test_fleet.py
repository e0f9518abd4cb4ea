"""Runs on many machines: runs submitted to the team's PostgreSQL store, run by worker processes, each job in a child
process; a worker killed with SIGKILL (its whole process group, as a host that dies) has its runs resumed by another
from their newest checkpoints, each finished task's model calls made once, no run written by two processes at once.
Real PostgreSQL, real worker processes, a real model server on 127.0.0.1."""

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
    cli_argv,
    finished_steps,
    in_group,
    kill_worker,
    model_calls,
    pasted,
    program_env,
    start_worker,
    submit_run,
    submitted,
    two_writers,
)
from support.processes import user_env
from support.waiting import wait_for

from crewpoint.tui.cli.fleet_engine import QUEUE, TASK, connect, make_app, status, where

RUNS = 20


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        running.mode = "slow"
        running.delay = 0.15
        yield running


def test_a_killed_worker_s_runs_finish_on_the_other_each_finished_task_asked_once(
    pg_location: str, tmp_path: Path, server: LLMServer
) -> None:
    env = program_env(tmp_path, server)
    for n in range(RUNS):
        queued = submit_run(pg_location, tmp_path, env, "crew_app.py:crew", "--input", f"topic=topic-{n}")
        assert queued.returncode == 0, queued.stderr
        assert queued.stdout.startswith("queued job "), queued.stdout
        watch = queued.stdout.splitlines()[1].removeprefix("watch it with: ")
    a = start_worker(pg_location, tmp_path, env, "--concurrency", "3")
    b = start_worker(pg_location, tmp_path, env, "--concurrency", "3")
    try:

        def a_runs_a_checkpointed_run() -> bool:
            assert a.poll() is None and b.poll() is None
            _, jobs = status(pg_location)
            done = finished_steps(pg_location)
            return any(j.status == "doing" and in_group(j.pid, a.pid) and done.get(j.lineage or "") for j in jobs)

        wait_for(a_runs_a_checkpointed_run, "worker A mid-run, with a checkpoint written")
        before = finished_steps(pg_location)
        os.killpg(a.pid, signal.SIGKILL)  # the worker and its children, as a host that dies
        assert a.wait(timeout=30) == -signal.SIGKILL
        # what was asked once A is gone (a call A's child began after the checkpoints were read is counted here;
        # B takes A's runs only once A's heartbeats are missed)
        asked_before = model_calls(server)

        def all_finished() -> bool:
            assert b.poll() is None
            _, jobs = status(pg_location)
            assert not [j for j in jobs if j.status == "failed"], jobs
            return len(jobs) == RUNS and all(j.status == "succeeded" for j in jobs)

        wait_for(all_finished, "every run finished on worker B", timeout=120)
    finally:
        kill_worker(a)
        kill_worker(b)

    _, jobs = status(pg_location)
    recovered = [j for j in jobs if j.attempts > 1]
    assert recovered, "no run was recovered from the killed worker"
    done = finished_steps(pg_location)
    assert sorted(done.get(j.lineage or "", 0) for j in jobs) == [4] * RUNS
    asked = model_calls(server)
    for n in range(RUNS):
        for step in range(1, 5):
            key = f"step {step} of topic-{n}"
            assert asked[key] >= 1, key
            assert asked[key] <= asked_before[key] + 1, key  # at most the call cut short by the kill, once more
    topics = {j.lineage: f"topic-{n}" for n, j in enumerate(sorted(jobs, key=lambda j: j.id))}
    for lineage, steps in before.items():  # a task checkpointed before the kill was asked once, never again
        for step in range(1, steps + 1):
            assert asked[f"step {step} of {topics[lineage]}"] == 1, (lineage, step)
    assert not two_writers(pg_location)
    shown = pasted(watch, tmp_path, env)  # the command submit printed
    assert shown.returncode == 0, shown.stderr
    assert sum(" succeeded " in line for line in shown.stdout.splitlines()) == RUNS


def test_a_job_naming_a_program_the_worker_was_not_started_with_or_carrying_more_than_data_is_refused(
    pg_location: str, tmp_path: Path, server: LLMServer
) -> None:
    (tmp_path / "crew_app.py").write_text(PROGRAM, encoding="utf-8")
    (tmp_path / "other.py").write_text(PROGRAM, encoding="utf-8")
    env = user_env(FLEET_TEST_LLM=server.base_url, OPENAI_API_KEY="sk-test")
    queued = submit_run(pg_location, tmp_path, env, "other.py:crew", "--input", "topic=t")
    assert queued.returncode == 0, queued.stderr
    app = make_app(pg_location)  # a job written by hand that carries more than data: a URL for the model
    with app.open():
        app.configure_task(TASK, queue=QUEUE).defer(
            program="crew_app.py:crew", inputs={"topic": "t"}, budget=None, base_url="http://127.0.0.1:9/v1"
        )
    worker = start_worker(pg_location, tmp_path, env, "--concurrency", "3")
    try:

        def failed() -> bool:
            assert worker.poll() is None
            _, jobs = status(pg_location)
            return len(jobs) == 2 and all(j.status == "failed" for j in jobs)

        wait_for(failed, "both jobs refused")
    finally:
        kill_worker(worker)
    assert server.requests == []  # nothing of the program ran
    said = (tmp_path / "worker-0.log").read_text(encoding="utf-8")
    assert "job 1 refused: this worker runs only crew_app.py:crew, not other.py:crew" in said
    assert "job 2 refused: the job carries what a worker never takes: base_url" in said


def test_status_lists_workers_and_jobs_and_a_store_that_is_not_postgresql_is_one_line(
    pg_location: str, tmp_path: Path
) -> None:
    env = user_env()
    shown = subprocess.run(
        cli_argv("worker", "--status", "-l", pg_location), cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[0].split() == ["WORKER", "HEARTBEAT", "JOBS"]
    assert len(shown.stdout.strip().splitlines()) == 3  # the two headings: no worker, no job
    with connect(pg_location) as conn:  # reading made nothing: no store, no queue
        schema = where(pg_location).schema
        tables = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = %s", (schema,)).fetchone()
    assert tables == (0,)
    wrong = submit_run(str(tmp_path / "store"), tmp_path, env, "crew_app.py:crew")
    assert wrong.returncode == 2
    assert len(wrong.stderr.strip().splitlines()) == 1
    assert "postgresql://" in wrong.stderr


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # gone before it was opened, or between opening and reading
        return False


def test_a_stopped_worker_loses_its_run_and_writes_nothing_after_it_goes_on(
    pg_location: str, tmp_path: Path, server: LLMServer
) -> None:
    from crewpoint.checkpoint.stores import list_checkpoints

    server.delay = 0.6
    env = submitted(pg_location, tmp_path, server, "topic-0")
    a = start_worker(pg_location, tmp_path, env, "--concurrency", "3")
    b: subprocess.Popen[bytes] | None = None
    try:

        def checkpointed() -> bool:
            assert a.poll() is None
            _, jobs = status(pg_location)
            return bool(jobs[0].lineage and finished_steps(pg_location).get(jobs[0].lineage))

        wait_for(checkpointed, "worker A's run checkpointed")
        child = status(pg_location)[1][0].pid
        assert child is not None and in_group(child, a.pid)
        os.killpg(a.pid, signal.SIGSTOP)  # cut off: alive, silent
        b = start_worker(pg_location, tmp_path, env, "--concurrency", "3")

        def finished_on_b() -> bool:
            assert b is not None and b.poll() is None
            _, jobs = status(pg_location)
            return jobs[0].status == "succeeded" and jobs[0].pid != child

        wait_for(finished_on_b, "the run finished on worker B", timeout=120)
        written = {m.id for m in list_checkpoints(pg_location)}
        asked = len(server.requests)
        os.killpg(a.pid, signal.SIGCONT)
        wait_for(lambda: not _alive(child), "worker A's child gone once it goes on")
        assert {m.id for m in list_checkpoints(pg_location)} == written
        assert len(server.requests) <= asked + 1  # at most the answer it was waiting for when stopped
        said = tmp_path / "worker-0.log"
        wait_for(lambda: "lost the run's lock" in said.read_text(encoding="utf-8"), "worker A saying it lost the run")
    finally:
        os.killpg(a.pid, signal.SIGCONT)
        kill_worker(a)
        if b is not None:
            kill_worker(b)
    assert finished_steps(pg_location) == {status(pg_location)[1][0].lineage: 4}
    assert not two_writers(pg_location)


def test_both_workers_killed_and_one_started_later_every_run_finishes_each_checkpointed_task_asked_once(
    pg_location: str, tmp_path: Path, server: LLMServer
) -> None:
    server.delay = 2.0  # each task long enough for both workers to be seen mid-run
    env = program_env(tmp_path, server)
    runs = 4
    for n in range(runs):
        assert submit_run(pg_location, tmp_path, env, "crew_app.py:crew", "--input", f"topic=topic-{n}").returncode == 0
    a, b = (
        start_worker(pg_location, tmp_path, env, "--concurrency", "3"),
        start_worker(pg_location, tmp_path, env, "--concurrency", "3"),
    )
    later: subprocess.Popen[bytes] | None = None
    try:

        def both_run_checkpointed_runs() -> bool:
            assert a.poll() is None and b.poll() is None
            _, jobs = status(pg_location)
            done = finished_steps(pg_location)
            mid = [j for j in jobs if j.status == "doing" and 0 < done.get(j.lineage or "", 0) < 4]
            return any(in_group(j.pid, a.pid) for j in mid) and any(in_group(j.pid, b.pid) for j in mid)

        wait_for(both_run_checkpointed_runs, "both workers mid-run, with checkpoints written")
        os.killpg(a.pid, signal.SIGKILL)
        os.killpg(b.pid, signal.SIGKILL)
        a.wait(timeout=30)
        b.wait(timeout=30)
        before, asked_before = finished_steps(pg_location), model_calls(server)
        server.delay = 0.15
        later = start_worker(pg_location, tmp_path, env, "--concurrency", "3")

        def all_finished() -> bool:
            assert later is not None and later.poll() is None
            _, jobs = status(pg_location)
            assert not [j for j in jobs if j.status == "failed"], jobs
            return all(j.status == "succeeded" for j in jobs)

        wait_for(all_finished, "every run finished on the worker started later", timeout=120)
    finally:
        for proc in (a, b, later):
            if proc is not None:
                kill_worker(proc)
    _, jobs = status(pg_location)
    done, asked = finished_steps(pg_location), model_calls(server)
    assert sorted(done.get(j.lineage or "", 0) for j in jobs) == [4] * runs
    topics = {j.lineage: f"topic-{n}" for n, j in enumerate(sorted(jobs, key=lambda j: j.id))}
    for lineage, steps in before.items():
        for step in range(1, steps + 1):
            assert asked[f"step {step} of {topics[lineage]}"] == asked_before[f"step {step} of {topics[lineage]}"] == 1
    assert not two_writers(pg_location)
