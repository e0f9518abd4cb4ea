"""A real user's crew, defined in their own script, resumes after kill -9 without the trust variable.

The script defines its own LLM class (counting its calls into a file), a ``@tool`` and a module-level task
callback. Its first run is killed with SIGKILL once task 1's checkpoint is on disk (task 2's model call waits
for a release file that the first run never gets). Then each way in finishes the run: the script itself with
``kickoff(from_checkpoint=...)``, ``crewpoint checkpoint resume --app script.py:crew``, and the app's Resume
with its App field pre-filled from the checkpoint. No finished task's
model call is repeated, the tool and the callback work, and ``CREWPOINT_DESERIALIZE_CALLBACKS`` is never set.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import CREWPOINT
from support.processes import done_counts, kill_when, user_env, words

from crewpoint.checkpoint import ops
from crewpoint.providers.base import CheckpointMeta

SCRIPT = '''
import os
import sys
import threading

from crewpoint import Agent, CheckpointConfig, Crew, Task
from crewpoint.llm import BaseLLM
from crewpoint.tools import tool

HERE = os.path.dirname(os.path.abspath(__file__))


def log(name, line):
    with open(os.path.join(HERE, name), "a", encoding="utf-8") as f:
        f.write(line + "\\n")


class CountingLLM(BaseLLM):
    """Uses the lookup tool once per task, then answers; task B waits for a release file."""

    model: str = "counting"

    def call(self, messages, **kwargs):
        prompt = messages[1]["content"]
        task = prompt.split("Current task: step ", 1)[1][0]
        log("calls.log", task)
        if task == "B":
            release = os.path.join(HERE, "release")
            while not os.path.exists(release):
                threading.Event().wait(0.05)
        if not messages[-1]["content"].startswith("Observation:"):
            return 'Action: lookup\\nAction Input: {"topic": "%s"}' % task
        return "Final Answer: answer %s (%s)" % (task, messages[-1]["content"])


@tool
def lookup(topic: str) -> str:
    """Look a topic up in the team's notes."""
    log("tools.log", topic)
    return "notes on " + topic


def on_done(output):
    log("callbacks.log", output.raw[:8])


llm = CountingLLM()
writer = Agent(role="Writer", goal="write", backstory="", llm=llm, tools=[lookup])
crew = Crew(
    agents=[writer],
    tasks=[
        Task(name="a", description="step A: gather", expected_output="notes", agent=writer, callback=on_done),
        Task(name="b", description="step B: draft", expected_output="draft", agent=writer, callback=on_done),
        Task(name="c", description="step C: polish", expected_output="text", agent=writer, callback=on_done),
    ],
    checkpoint=CheckpointConfig(location=os.path.join(HERE, "store")),
)

if __name__ == "__main__":
    if len(sys.argv) > 1:
        result = crew.kickoff(from_checkpoint=sys.argv[1])
    else:
        result = crew.kickoff()
    print("RESULT", result.raw)
'''


@pytest.fixture
def killed_run(tmp_path: Path) -> Path:
    """A project folder whose crew was killed with SIGKILL after task 1's checkpoint was written."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "my_crew.py").write_text(SCRIPT, encoding="utf-8")
    kill_when(
        [sys.executable, "my_crew.py"],
        project,
        lambda: any(done >= 1 for done in done_counts(project / "store")),
        "the first run's checkpoint",
        user_env(),
    )
    assert words(project / "calls.log")[:2] == ["A", "A"]
    assert words(project / "callbacks.log") == ["answer", "A"]
    (project / "release").write_text("", encoding="utf-8")
    return project


def _first_checkpoint(project: Path) -> CheckpointMeta:
    metas = [m for m in ops.list_checkpoints(str(project / "store")) if not m.damaged]
    assert [m.tasks_done for m in metas] == [1]
    return metas[0]


def _check_finished(project: Path, out: str) -> None:
    calls = words(project / "calls.log")
    assert calls.count("A") == 2, calls  # task 1's two model calls (tool, answer) were never repeated
    assert calls.count("B") >= 2 and calls.count("C") == 2, calls
    assert words(project / "tools.log").count("A") == 1
    assert "B" in words(project / "tools.log") and "C" in words(project / "tools.log")
    assert words(project / "callbacks.log") == ["answer", "A", "answer", "B", "answer", "C"]
    assert "answer C (Observation: notes on C)" in out
    metas = [m for m in ops.list_checkpoints(str(project / "store")) if not m.damaged]
    assert [m.tasks_done for m in metas] == [3, 2, 1]
    assert metas[0].lineage == metas[-1].lineage
    body = ops.load(metas[0].id, str(project / "store")).body
    agent = body["entity"]["agents"][0]
    assert agent["llm"]["class"] == "__main__.CountingLLM"
    assert agent["tools"][0]["path"] == "__main__.lookup"
    assert body["entity"]["tasks"][0]["callback"] == "__main__.on_done"


def test_the_script_resumes_its_own_crew_with_from_checkpoint(killed_run: Path) -> None:
    first = _first_checkpoint(killed_run)
    proc = subprocess.run(
        [sys.executable, "my_crew.py", first.location],
        cwd=killed_run,
        env=user_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    _check_finished(killed_run, proc.stdout)


def test_the_cli_resumes_the_users_crew_named_by_app(killed_run: Path) -> None:
    first = _first_checkpoint(killed_run)
    record = ops.load(first.id, str(killed_run / "store"))
    assert record.body["origin"]["attr"] == "crew"
    assert record.body["origin"]["file"] == str(killed_run / "my_crew.py")
    elsewhere = killed_run.parent / "elsewhere"
    elsewhere.mkdir()
    refused = subprocess.run(
        [CREWPOINT, "checkpoint", "resume", first.id, "--location", str(killed_run / "store")],
        cwd=elsewhere,
        env=user_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1 and "__main__.CountingLLM" in refused.stderr
    assert "--app" in refused.stderr and "CREWPOINT_DESERIALIZE_CALLBACKS=1" in refused.stderr
    trusting = subprocess.run(
        [CREWPOINT, "checkpoint", "resume", first.id, "--location", str(killed_run / "store")],
        cwd=elsewhere,
        env={**user_env(), "CREWPOINT_DESERIALIZE_CALLBACKS": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert trusting.returncode == 2 and trusting.stderr.count("\n") == 1
    assert "__main__.CountingLLM" in trusting.stderr and "--app FILE.py:attr" in trusting.stderr
    proc = subprocess.run(
        [
            CREWPOINT,
            "checkpoint",
            "resume",
            first.id[:10],
            "--location",
            str(killed_run / "store"),
            "--app",
            str(killed_run / "my_crew.py") + ":crew",
        ],
        cwd=elsewhere,
        env=user_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    _check_finished(killed_run, proc.stdout)


def test_the_projects_pyproject_names_the_app(killed_run: Path) -> None:
    (killed_run / "pyproject.toml").write_text('[tool.crewpoint]\napp = "my_crew.py:crew"\n', encoding="utf-8")
    first = _first_checkpoint(killed_run)
    proc = subprocess.run(
        [CREWPOINT, "checkpoint", "resume", first.id, "--location", "store", "--progress", "json"],
        cwd=killed_run,
        env=user_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert events[-1]["event"] == "finished"
    _check_finished(killed_run, json.dumps(events))


def test_a_task_renamed_since_the_checkpoint_is_planned_as_new_and_the_saved_one_as_dropped(killed_run: Path) -> None:
    first = _first_checkpoint(killed_run)
    other = killed_run / "other.py"
    other.write_text(
        SCRIPT.replace('Task(name="c", description="step C: polish"', 'Task(name="z", description="step C: polish"'),
        encoding="utf-8",
    )
    before = sorted(p.name for p in (killed_run / "store").rglob("*.json"))
    proc = subprocess.run(
        [CREWPOINT, "checkpoint", "fork", first.id, "--location", "store", "--app", "other.py:crew", "--dry-run"],
        cwd=killed_run,
        env=user_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    plan = proc.stdout.split("plan:\n", 1)[1].split("tasks to run:", 1)[0].splitlines()
    assert plan == [
        "  1. a: kept",
        "  2. b: kept, runs (not run at the checkpoint)",
        "  3. z: new, runs (not in the checkpoint)",
        "  - c: dropped (not in the program; it had not run)",
    ]
    assert "tasks to run: 2. b, 3. z" in proc.stdout
    assert sorted(p.name for p in (killed_run / "store").rglob("*.json")) == before
    assert words(killed_run / "calls.log").count("B") == 1  # only the killed run's waiting call


def test_bad_app_specs_say_what_to_fix(killed_run: Path) -> None:
    first = _first_checkpoint(killed_run)
    for spec, fragment in [
        ("missing.py:crew", "no such file"),
        ("my_crew.py:nothing", "has no attribute 'nothing'"),
        ("my_crew.py:llm", "is a CountingLLM, not a crew"),
        ("my_crew.py:bad-name", "is not an attribute name"),
        ("no_such_module_xyz:crew", "no module named 'no_such_module_xyz'"),
    ]:
        proc = subprocess.run(
            [CREWPOINT, "checkpoint", "resume", first.id, "--location", "store", "--app", spec],
            cwd=killed_run,
            env=user_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 2, (spec, proc.stderr)
        assert fragment in proc.stderr and proc.stderr.count("\n") == 1, (spec, proc.stderr)


async def test_the_apps_resume_runs_the_users_program_prefilled_from_the_checkpoint(
    killed_run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_app import choose, settle, wait_until

    from crewpoint.screens.resume_confirm import ResumeScreen
    from crewpoint.tui.app import make_app
    from crewpoint.tui.widgets.app_field import AppField

    monkeypatch.chdir(killed_run)
    first = _first_checkpoint(killed_run)
    app = make_app("store", watch=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        screen = await choose(pilot, first.id)
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(pilot.app.screen, ResumeScreen)
        await settle(pilot)
        field = pilot.app.screen.query_one(AppField)
        assert field.spec == "my_crew.py:crew"  # pre-filled from where the checkpoint's crew came from
        assert field.file == str(killed_run / "my_crew.py")  # the file it runs, shown before it runs
        await pilot.press("y")
        await wait_until(pilot, lambda: not screen.run_panel.running and screen.run_panel.has_class("-ok"), 120)
    out = "\n".join(str(m.id) for m in ops.list_checkpoints(str(killed_run / "store")))
    newest = ops.list_checkpoints(str(killed_run / "store"))[0]
    result = ops.load(newest.id, str(killed_run / "store")).body["entity"]["tasks"][2]["output"]["raw"]
    _check_finished(killed_run, result + out)
