"""``crewpoint checkpoint check``: a store of 100 stopped runs against a program with one task changed since most
of them were written. Real processes: the user's program writes the store, the ``crewpoint`` command checks it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support.processes import user_env

BIN = os.path.dirname(sys.executable)

PROGRAM = textwrap.dedent(
    """
    import os
    import sys

    from crewpoint import Agent, CheckpointConfig, Crew, Task
    from crewpoint.llm import BaseLLM

    CALLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "calls.log")


    class Stops(BaseLLM):
        model: str = "local"

        def call(self, messages, **kwargs):
            with open(CALLS, "a", encoding="utf-8") as log:
                log.write("call\\n")
            if messages[-1]["content"].startswith("Current task: Outline"):
                raise RuntimeError("the model went away")
            return "Final Answer: facts"


    def make():
        agent = Agent(role="Writer", goal="write", backstory="b", llm=Stops())
        return Crew(
            agents=[agent],
            tasks=[
                Task(name="research", description=os.environ.get("RESEARCH", "Research the topic."), agent=agent),
                Task(name="outline", description="Outline the post.", agent=agent),
            ],
            checkpoint=CheckpointConfig(location=".checkpoints"),
        )


    crew = make()

    if __name__ == "__main__":
        for _ in range(int(sys.argv[1])):
            try:
                make().kickoff()
            except RuntimeError:
                pass  # the run failed at its second task: its checkpoint after the first one stays
    """
)
CHANGED = "Research the topic in depth."


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """99 runs written by the program, then the program's research task changed and one run written by it: 100
    failed runs, each checkpointed after its first task."""
    folder = tmp_path_factory.mktemp("check") / "project"
    folder.mkdir()
    (folder / "prog.py").write_text(PROGRAM, encoding="utf-8")
    for count, env in (("99", user_env()), ("1", user_env(RESEARCH=CHANGED))):
        made = subprocess.run(
            [sys.executable, "prog.py", count], cwd=folder, env=env, capture_output=True, text=True, timeout=600
        )
        assert made.returncode == 0, made.stderr
    (folder / "calls.log").unlink()
    return folder


def check(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [os.path.join(BIN, "crewpoint"), "checkpoint", "check", "--app", "prog.py:crew", *args],
        cwd=project,
        env=user_env(**env),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_check_counts_what_each_stopped_run_would_re_run(project: Path) -> None:
    before = sorted(p.name for p in (project / ".checkpoints").rglob("*"))
    done = check(project, RESEARCH=CHANGED)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("100 resumable checkpoints in ")
    assert lines[1].startswith("  99 re-run 'research' (description changed): ")
    assert lines[1].endswith(" and 94 more")
    assert lines[2] == "  1 resume unchanged"
    assert not (project / "calls.log").exists()  # no model was called
    assert sorted(p.name for p in (project / ".checkpoints").rglob("*")) == before  # nothing was written

    strict = check(project, "--strict", RESEARCH=CHANGED)
    assert strict.returncode == 1
    assert strict.stderr == "crewpoint: --strict: the program changed since some checkpoints (listed above)\n"

    as_json = check(project, "--json")
    assert as_json.returncode == 0, as_json.stderr
    data = json.loads(as_json.stdout)
    assert data["counts"] == {"resume unchanged": 99, "re-run 'research' (description changed)": 1}
    (changed,) = [c for c in data["checkpoints"] if not c["unchanged"]]
    verdicts = [(v["name"], v["verdict"], v["runs"]) for v in changed["plan"]["verdicts"]]
    assert verdicts == [("research", "changed", True), ("outline", "kept", True)]
    assert check(project, "--strict").returncode == 1


def test_check_refuses_bad_input_with_exit_2(project: Path) -> None:
    missing = check(project, "nowhere")
    assert missing.returncode == 2 and missing.stderr.startswith("crewpoint: ")
    bad_app = subprocess.run(
        [os.path.join(BIN, "crewpoint"), "checkpoint", "check", "--app", "nothing.py:crew"],
        cwd=project,
        env=user_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad_app.returncode == 2
    assert "no such file" in bad_app.stderr
