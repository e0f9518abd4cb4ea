"""``resume`` from the command line on a checkpoint of a live run refuses, as the app does: the run's remaining
tasks would run a second time beside it. One line (exit 2) names the live run and offers a fork that works when
pasted, or ``--force``. A real crew's run held live in its own process, its heartbeat fresh."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cli import checkpoint
from support.processes import user_env
from support.waiting import wait_for

from crewpoint.checkpoint import ops
from crewpoint.providers import provider_for
from crewpoint.providers.base import CheckpointError
from crewpoint.providers.runs import classify
from crewpoint.tui.diagnostics import ExitCode

HELD = textwrap.dedent(
    """
    import sys

    from crewpoint import Agent, CheckpointConfig, Crew, Task
    from crewpoint.llm import OfflineLLM

    HOLD = __name__ == "__main__"  # run as a script it holds; named with --app, it runs straight through


    class Gated(OfflineLLM):
        def call(self, messages, **kwargs):
            global HOLD
            if HOLD and self.calls == 1:  # the first task is done and checkpointed: wait for the test's word
                HOLD = False
                sys.stdin.readline()
            return super().call(messages, **kwargs)


    agent = Agent(role="Researcher", goal="Research {topic}", llm=Gated())
    tasks = [Task(description=f"Step {n} on {{topic}}", expected_output="notes", agent=agent) for n in (1, 2, 3)]
    crew = Crew(name="research", agents=[agent], tasks=tasks, checkpoint=CheckpointConfig(location="store"))

    if __name__ == "__main__":
        crew.kickoff(inputs={"topic": "tides"})
    """
)


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return checkpoint(*args, cwd=cwd, env=user_env())


@pytest.fixture
def live(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """A crew's run held live after its first task (its record ``running``, its process alive), and the id of its
    newest checkpoint then."""
    store = tmp_path / "store"
    (tmp_path / "held.py").write_text(HELD)
    argv = [sys.executable, "held.py"]
    run = subprocess.Popen(argv, cwd=tmp_path, env=user_env(), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    try:

        def held() -> bool:
            assert run.poll() is None
            try:  # the store appears with the first checkpoint
                runs = provider_for(str(store)).read_runs(str(store))
                done = [m for m in ops.list_checkpoints(str(store)) if m.tasks_done >= 1]
            except CheckpointError:
                return False
            return bool(done) and any(classify(r) == "running" and r.lineage == done[0].lineage for r in runs)

        wait_for(held, "the crew's run held live after its first task")
        newest = ops.list_checkpoints(str(store))[0]
        yield run, newest.id
    finally:
        if run.poll() is None and run.stdin is not None:
            run.stdin.write(b"go\n")
            run.stdin.close()
        run.wait(timeout=120)


def test_resume_of_a_live_runs_checkpoint_is_refused_naming_the_run_and_offering_a_fork_that_works(
    live: tuple[subprocess.Popen[bytes], str], tmp_path: Path
) -> None:
    run, checkpoint_id = live
    refused = cli("resume", checkpoint_id[:10], "--location", "store", "--app", "held.py:crew", cwd=tmp_path)
    assert refused.returncode == ExitCode.BAD_INPUT == 2
    assert len(refused.stderr.splitlines()) == 1, refused.stderr
    line = refused.stderr
    assert f"pid {run.pid}" in line and "is live" in line and "--force" in line and "--app held.py:crew" in line
    assert refused.stdout == ""
    dry = cli("resume", checkpoint_id[:10], "--location", "store", "--app", "held.py:crew", "--dry-run", cwd=tmp_path)
    assert (dry.returncode, dry.stderr) == (2, refused.stderr)  # the dry run refuses exactly what the run refuses
    before = {m.id for m in ops.list_checkpoints(str(tmp_path / "store"))}

    offered = re.search(r"`(crewpoint checkpoint fork [^`]+)`", line)
    assert offered is not None, line
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    pasted = subprocess.run(
        offered.group(1),
        shell=True,
        cwd=tmp_path,
        env=user_env(PATH=path),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert pasted.returncode == 0, pasted.stderr
    forked = [m for m in ops.list_checkpoints(str(tmp_path / "store")) if m.id not in before]
    assert forked and all(m.branch != "main" for m in forked)  # a branch of its own, beside the live run
    assert run.poll() is None  # the live run was left alone


def test_resume_force_runs_beside_the_live_run_and_a_finished_run_resumes_without_it(
    live: tuple[subprocess.Popen[bytes], str], tmp_path: Path
) -> None:
    run, checkpoint_id = live
    forced = cli("resume", checkpoint_id[:10], "--location", "store", "--app", "held.py:crew", "--force", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert run.stdin is not None
    run.stdin.write(b"go\n")
    run.stdin.close()
    assert run.wait(timeout=120) == 0
    after = cli("resume", checkpoint_id[:10], "--location", "store", "--app", "held.py:crew", "--dry-run", cwd=tmp_path)
    assert after.returncode == 0, after.stderr  # the run is over: nothing to refuse beside
