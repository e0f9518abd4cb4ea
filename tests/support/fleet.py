"""The fleet as its tests drive it: a four-task program, ``crewpoint submit`` and ``crewpoint worker`` in processes
of their own (each worker in a process group of its own, killed whole as a host that dies), and what the tests read
afterwards: the model calls made for each step and the tasks each run finished."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

from llm_server import LLMServer

from crewpoint.tui.cli.fleet_engine import JobRow, status
from support.processes import user_env
from support.waiting import wait_for

PROGRAM = """
import os
from crewpoint import LLM, Agent, Crew, Task

llm = LLM(model="gpt-4o-mini", base_url=os.environ["FLEET_TEST_LLM"], provider="openai")
writer = Agent(role="Writer", goal="write", backstory="writes", llm=llm)
crew = Crew(
    agents=[writer],
    tasks=[
        Task(name=f"s{i}", description=f"step {i} of {{topic}}", expected_output="text", agent=writer)
        for i in range(1, 5)
    ],
)
"""
"""A four-task crew whose model is the test's server (``FLEET_TEST_LLM``), written as ``crew_app.py``."""

HEARTBEAT = "0.5"
STALLED_AFTER = "2"
"""The workers' heartbeat and the silence after which their runs go to another: short, so recoveries are quick."""


def cli_argv(*args: str) -> list[str]:
    """``crewpoint ARGS`` run by this interpreter."""
    return [sys.executable, "-m", "crewpoint.tui.cli", *args]


def start_worker(
    location: str, cwd: Path, env: dict[str, str], *extra: str, app: str = "crew_app.py:crew"
) -> subprocess.Popen[bytes]:
    """A worker of ``app`` in a process group of its own (its children in it too), what it says kept in
    ``cwd/worker-N.log`` (N counts the workers started in ``cwd``)."""
    argv = cli_argv("worker", "-l", location, "--app", app, *extra)
    argv += ["--heartbeat", HEARTBEAT, "--stalled-after", STALLED_AFTER]
    log = cwd / f"worker-{len(list(cwd.glob('worker-*.log')))}.log"
    with log.open("wb") as said:
        return subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=said, start_new_session=True)


def submit_run(location: str, cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``crewpoint submit ARGS -l LOCATION`` in ``cwd``, its output as text."""
    return subprocess.run(
        cli_argv("submit", *args, "-l", location), cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def kill_worker(proc: subprocess.Popen[bytes]) -> None:
    """The worker and every process of its group killed with SIGKILL, unless it already ended."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def model_calls(server: LLMServer) -> Counter[str]:
    """How many requests the model server got for each step of each run (``step 2 of topic-3``)."""
    seen: Counter[str] = Counter()
    for request in server.requests:
        if not isinstance(request.body, dict):  # cut off by a kill while it was sent: never answered
            continue
        users = [m["content"] for m in request.body["messages"] if m["role"] == "user"]
        first = users[0] if users else ""
        seen[first.removeprefix("Current task: ").split("\n")[0].strip()] += 1
    return seen


def in_group(pid: int | None, group: int) -> bool:
    """Whether process ``pid`` runs in process group ``group`` (a worker's child does)."""
    try:
        return pid is not None and os.getpgid(pid) == group
    except ProcessLookupError:
        return False


def finished_steps(location: str) -> dict[str, int]:
    """Tasks done by each run (lineage), at its newest checkpoint."""
    from crewpoint.checkpoint.stores import list_checkpoints

    done: dict[str, int] = {}
    for meta in list_checkpoints(location):
        done[meta.lineage] = max(done.get(meta.lineage, 0), meta.tasks_done)
    return done


def two_writers(location: str) -> list[tuple[str, str]]:
    """The (run, checkpoint) pairs whose checkpoint has two children in its run: none when each run's checkpoints
    are one chain, as one writer at a time leaves them."""
    from crewpoint.checkpoint.stores import list_checkpoints

    children = Counter((m.lineage, m.parent_id) for m in list_checkpoints(location) if m.parent_id)
    return [pair for pair, count in children.items() if count > 1]


def program_env(cwd: Path, server: LLMServer, **extra: str) -> dict[str, str]:
    """:data:`PROGRAM` written as ``cwd/crew_app.py``; the environment its runs see: a user's, the test's model
    server, a test key, and ``extra``."""
    (cwd / "crew_app.py").write_text(PROGRAM, encoding="utf-8")
    return user_env(FLEET_TEST_LLM=server.base_url, OPENAI_API_KEY="sk-test", **extra)


def checkpointed_on(location: str, worker: subprocess.Popen[bytes], job_id: int = 1) -> str:
    """Wait until job ``job_id`` runs on ``worker`` (its child in the worker's group) and its run has checkpointed
    a task; that run's lineage. The worker ending first fails the test."""

    def job() -> JobRow | None:
        return next((j for j in status(location)[1] if j.id == job_id), None)

    def ready() -> bool:
        assert worker.poll() is None, f"worker {worker.pid} ended"
        now = job()
        return bool(now and now.lineage and in_group(now.pid, worker.pid) and finished_steps(location).get(now.lineage))

    wait_for(ready, f"job {job_id} checkpointed on worker {worker.pid}")
    found = job()
    assert found is not None and found.lineage
    return found.lineage


def submitted(location: str, cwd: Path, server: LLMServer, *topics: str) -> dict[str, str]:
    """:func:`program_env`, and one run of the program submitted for each of ``topics`` (one on ``t`` when none
    is named), each queued; the environment."""
    env = program_env(cwd, server)
    for topic in topics or ("t",):
        queued = submit_run(location, cwd, env, "crew_app.py:crew", "--input", f"topic={topic}")
        assert queued.returncode == 0 and queued.stdout.startswith("queued job "), queued.stderr
    return env


def pasted(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``command`` as a command printed it, pasted into a shell in ``cwd`` (``crewpoint`` on its PATH)."""
    shell_env = {**env, "PATH": f"{Path(sys.executable).parent}:{env['PATH']}"}
    return subprocess.run(command, shell=True, cwd=cwd, env=shell_env, capture_output=True, text=True, timeout=120)
