"""An answer to a waiting run of the fleet queues its continuation: the answering process records the answer (one
wins per request) and a worker resumes the run from the answered checkpoint; nothing of the program runs where the
answer was given. Real PostgreSQL, real worker processes, real ``crewpoint checkpoint answer`` processes, a real
model server on 127.0.0.1."""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_server import LLMServer
from support.fleet import PROGRAM, cli_argv, finished_steps, kill_worker, model_calls, pasted, start_worker, submit_run
from support.processes import user_env
from support.waiting import wait_for

from crewpoint.tui.cli.fleet_engine import status

REVIEWED = PROGRAM.replace("agent=writer)", "agent=writer, human_input=i == 2)")
"""The fleet's four-task crew with its second task reviewed by a person."""


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        yield running


def waiting_on_the_fleet(location: str, project: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    """A worker whose run of the reviewed crew waits for a person after its second task; the worker and the
    ``answer`` command it printed in its log."""
    (project / "crew_app.py").write_text(REVIEWED, encoding="utf-8")
    assert submit_run(location, project, env, "crew_app.py:crew", "--input", "topic=t").returncode == 0
    worker = start_worker(location, project, env)
    said = project / "worker-0.log"

    def waiting() -> bool:
        assert worker.poll() is None
        return "answer with: " in said.read_text(encoding="utf-8")

    wait_for(waiting, "the run waiting for a person on the worker")
    line = next(line for line in said.read_text(encoding="utf-8").splitlines() if "answer with: " in line)
    # the job ends (its worker says so just before it marks it): nothing holds a worker while the run waits
    wait_for(lambda: status(location)[1][0].status == "succeeded", "the waiting run's job ended")
    return worker, line.split("answer with: ", 1)[1]


def test_an_answer_from_the_cli_queues_the_continuation_and_a_worker_finishes_the_run(
    pg_location: str, tmp_path: Path, server: LLMServer
) -> None:
    env = user_env(FLEET_TEST_LLM=server.base_url, OPENAI_API_KEY="sk-test")
    worker, command = waiting_on_the_fleet(pg_location, tmp_path, env)
    try:
        assert finished_steps(pg_location) == {status(pg_location)[1][0].lineage: 1}
        asked_before = len(server.requests)
        answered = pasted(f"{command} --accept", tmp_path, env)  # the command the worker printed
        assert answered.returncode == 0, answered.stderr
        queued, watch = answered.stdout.splitlines()
        assert queued == "queued job 2: a worker goes on with the answered run", answered.stdout
        assert len(server.requests) == asked_before  # nothing of the program ran in the answering process

        def finished() -> bool:
            assert worker.poll() is None
            jobs = status(pg_location)[1]
            assert not [j for j in jobs if j.status == "failed"], jobs
            return len(jobs) == 2 and all(j.status == "succeeded" for j in jobs)

        wait_for(finished, "the continuation finished on the worker", timeout=120)
        shown = pasted(watch.removeprefix("watch it with: "), tmp_path, env)
        assert shown.returncode == 0, shown.stderr
    finally:
        kill_worker(worker)
    jobs = status(pg_location)[1]
    assert jobs[0].lineage == jobs[1].lineage  # the same run went on
    assert finished_steps(pg_location) == {jobs[0].lineage: 4}
    assert all(n == 1 for n in model_calls(server).values()) and len(model_calls(server)) == 4, model_calls(server)
    assert sum(" succeeded " in line for line in shown.stdout.splitlines()) == 2
    again = subprocess.run(
        [*cli_argv("checkpoint", "answer", *shlex.split(command)[3:], "--accept")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert again.returncode == 2
    assert len(again.stderr.strip().splitlines()) == 1 and "already answered by " in again.stderr, again.stderr


LOCAL_RUN = """
import sys
from crew_app import crew
from crewpoint import CheckpointConfig
crew.checkpoint = CheckpointConfig(location=sys.argv[1])
crew.kickoff({"topic": "t"})
"""


def test_an_answer_on_fleet_sends_a_run_started_here_to_a_worker_and_says_the_job_as_its_last_record(
    pg_location: str, tmp_path: Path, server: LLMServer
) -> None:
    from crewpoint.checkpoint.stores import list_checkpoints
    from crewpoint.tui.run_protocol import QUEUED, ProgressRecord

    env = user_env(FLEET_TEST_LLM=server.base_url, OPENAI_API_KEY="sk-test", CREWPOINT_FEEDBACK="wait")
    (tmp_path / "crew_app.py").write_text(REVIEWED, encoding="utf-8")
    (tmp_path / "local_run.py").write_text(LOCAL_RUN, encoding="utf-8")
    ran = subprocess.run(
        [sys.executable, "local_run.py", pg_location], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert ran.returncode == 0, ran.stderr
    waiting = max(list_checkpoints(pg_location), key=lambda m: m.sequence)
    assert waiting.tasks_done == 1  # the second task's output waits for its review

    def answer(*more: str) -> subprocess.CompletedProcess[str]:
        argv = cli_argv("checkpoint", "answer", waiting.id, "-l", pg_location, "--accept", "--on-fleet", *more)
        return subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)

    no_app = answer()
    assert no_app.returncode == 2 and len(no_app.stderr.strip().splitlines()) == 1, no_app.stderr
    assert "--on-fleet needs --app APP" in no_app.stderr
    queued = answer("--app", "crew_app.py:crew", "--progress", "json")
    assert queued.returncode == 0, queued.stderr
    last = ProgressRecord.parse(queued.stdout.splitlines()[-1])
    assert last.event == QUEUED and (last.text or "").startswith("queued job 1: "), queued.stdout
    asked_here = sum(model_calls(server).values())
    worker = start_worker(pg_location, tmp_path, env)
    try:
        wait_for(lambda: [j.status for j in status(pg_location)[1]] == ["succeeded"], "the worker went on")
    finally:
        kill_worker(worker)
    assert finished_steps(pg_location) == {waiting.lineage: 4}
    asked = model_calls(server)
    assert sum(asked.values()) > asked_here and all(n == 1 for n in asked.values()), asked


def test_a_second_continuation_of_one_checkpoint_is_refused_and_writes_nothing(pg_location: str) -> None:
    """One continuation of an answered checkpoint waits in the queue at a time: a second is refused in one line,
    and neither its job nor its run's row is written (the two are one transaction)."""
    from crewpoint.tui.cli.fleet_engine import FleetError, Job, connect, go_on

    job = Job("crew_app.py:crew", {}, None, resume="c" * 32)
    first = go_on(pg_location, job, "l" * 32)
    with pytest.raises(FleetError, match=f"a continuation of checkpoint {'c' * 32} waits in the queue already"):
        go_on(pg_location, job, "l" * 32)
    assert [(j.id, j.status, j.lineage) for j in status(pg_location)[1]] == [(first, "todo", "l" * 32)]
    with connect(pg_location) as conn:
        rows = conn.execute("SELECT count(*) FROM crewpoint_fleet_runs").fetchone()
    assert rows is not None and rows[0] == 1
