"""``crewpoint checkpoint stop RUN`` on a run of the fleet: its job is aborted, the worker interrupts the run's
process, and the run ends interrupted with a checkpoint its resume goes on from; the worker goes on with other jobs.
On a local run it sends SIGINT to the process verified as that run. Real PostgreSQL, a real worker process, a real
model server on 127.0.0.1, a real program's process."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_server import LLMServer
from support.fleet import PROGRAM, checkpointed_on, cli_argv, kill_worker, pasted, start_worker, submit_run, submitted
from support.processes import done_counts, gated_demo, user_env
from support.waiting import wait_for

from crewpoint.tui.cli.fleet_engine import status


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        running.mode = "slow"
        running.delay = 0.5
        yield running


def test_stop_aborts_a_fleet_run_which_ends_interrupted_with_a_checkpoint(
    pg_location: str, tmp_path: Path, server: LLMServer
) -> None:
    from crewpoint.checkpoint.stores import list_checkpoints
    from crewpoint.providers.runs import read_runs

    env = submitted(pg_location, tmp_path, server)
    worker = start_worker(pg_location, tmp_path, env)
    try:
        server.hold(after=1)  # the second task's call waits: the stop lands mid-run, whatever the machine's load
        lineage = checkpointed_on(pg_location, worker)
        stopped = subprocess.run(
            cli_argv("checkpoint", "stop", lineage[:8], "-l", pg_location),
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert stopped.returncode == 0, stopped.stderr
        said, watch = stopped.stdout.splitlines()
        assert said.startswith(f"stopping job 1 (run {lineage[:8]})"), stopped.stdout
        wait_for(lambda: status(pg_location)[1][0].status == "aborted", "the job aborted")
        shown = pasted(watch.removeprefix("watch it with: "), tmp_path, env)  # the command stop printed
        assert shown.returncode == 0, shown.stderr
        assert any(line.split()[:2] == ["1", "aborted"] for line in shown.stdout.splitlines()), shown.stdout
        server.release()
        assert submit_run(pg_location, tmp_path, env, "crew_app.py:crew", "--input", "topic=u").returncode == 0
        wait_for(lambda: status(pg_location)[1][0].status == "succeeded", "the worker's next job finished")
    finally:
        kill_worker(worker)
    record = next(r for r in read_runs(pg_location) if r.lineage == lineage)
    assert record.status == "interrupted"
    mine = [m for m in list_checkpoints(pg_location) if m.lineage == lineage]
    newest = max(mine, key=lambda m: m.sequence)
    assert newest.tasks_done < 4  # stopped part-way
    assert record.checkpoint_id == newest.id
    said = (tmp_path / "worker-0.log").read_text(encoding="utf-8")
    assert "job 1 stopped: its run was interrupted" in said


def test_stop_cancels_a_queued_job_and_a_run_that_is_not_live_is_one_line(pg_location: str, tmp_path: Path) -> None:
    (tmp_path / "crew_app.py").write_text(PROGRAM, encoding="utf-8")
    env = user_env()
    assert submit_run(pg_location, tmp_path, env, "crew_app.py:crew", "--input", "topic=t").returncode == 0

    def stop(run: str) -> subprocess.CompletedProcess[str]:
        argv = cli_argv("checkpoint", "stop", run, "-l", pg_location)
        return subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)

    gone = stop("99")
    assert gone.returncode == 2
    assert len(gone.stderr.strip().splitlines()) == 1 and "no live run '99'" in gone.stderr, gone.stderr
    assert status(pg_location)[1][0].status == "todo"
    queued = stop("1")  # the job's number: no worker took it yet
    assert queued.returncode == 0, queued.stderr
    assert queued.stdout.startswith("cancelled job 1: no worker had started it"), queued.stdout
    assert status(pg_location)[1][0].status == "cancelled"


def test_stop_interrupts_a_local_run_in_the_process_verified_as_that_run(tmp_path: Path) -> None:
    from crewpoint.providers.runs import read_runs

    store = tmp_path / "store"
    env = user_env()
    proc = subprocess.Popen(gated_demo(store), cwd=tmp_path, env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    try:

        def live_after_its_first_task() -> bool:
            assert proc.poll() is None
            return bool(done_counts(store)) and any(r.status == "running" for r in read_runs(str(store)))

        wait_for(live_after_its_first_task, "the run live, held after its first task")
        run = next(r for r in read_runs(str(store)) if r.status == "running")
        stopped = subprocess.run(
            cli_argv("checkpoint", "stop", run.run_id[:8], "-l", str(store)),
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert stopped.returncode == 0, stopped.stderr
        assert stopped.stdout.startswith(f"stopping run {run.run_id[:8]}"), stopped.stdout
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    record = next(r for r in read_runs(str(store)) if r.run_id == run.run_id)
    assert record.status == "interrupted"
    assert record.checkpoint_id is not None
