"""A crew killed part-way, its program edited, then resumed with --app: each task gets a verdict, only the changed
tasks and what reads them call the model, and a saved output never lands on another task.

Real processes: the user's program (killed with SIGKILL once two of its three tasks are checkpointed, its third
task's call held), the ``crewpoint`` command, and the OpenAI-compatible server of ``tests/llm_server.py`` on
127.0.0.1, which answers ``echo: <the prompt>``: an output names the task that made it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_server import LLMServer
from support.processes import done_counts, kill_when

from crewpoint.checkpoint import ops

BIN = os.path.dirname(sys.executable)

PROGRAM = textwrap.dedent(
    """
    import os
    import threading
    from pathlib import Path

    from crewpoint import LLM, Agent, CheckpointConfig, Crew, Task
    from crewpoint.tools import tool

    HERE = Path(__file__).parent
    BASE = os.environ["CHANGES_TEST_LLM"]


    class Served(LLM):
        def call(self, messages, **kwargs):
            if os.environ.get("HOLD") and messages[-1]["content"].startswith("Current task: Write"):
                threading.Event().wait()  # the first run is killed here, its first two tasks checkpointed
            return super().call(messages, **kwargs)


    @tool
    def lookup(topic: str) -> str:
        \"\"\"Look a topic up.\"\"\"
        return "notes on " + topic


    researcher = Agent(
        role="Researcher", goal="find facts", backstory="careful", llm=Served(model="gpt-4o-mini", base_url=BASE)
    )
    writer = Agent(
        role="Writer", goal="write well", backstory="clear", llm=Served(model="gpt-4o-mini", base_url=BASE), tools=[]
    )
    research = Task(
        name="research", description="Research the topic.", expected_output="facts", agent=researcher, context=[]
    )
    outline = Task(
        name="outline", description="Outline the post.", expected_output="an outline", agent=writer, context=[]
    )
    write = Task(
        name="write", description="Write the post.", expected_output="a post", agent=writer, context=[research, outline]
    )
    crew = Crew(
        agents=[researcher, writer],
        tasks=[research, outline, write],
        checkpoint=CheckpointConfig(location=str(HERE / ".checkpoints")),
    )
    """
)
DESCRIPTIONS = {
    "Research the topic.": "research",
    "Outline the post.": "outline",
    "Write the post.": "write",
    "Scope the post.": "scope",
    "Research the topic in depth.": "research",
}
CHANGED = "Research the topic in depth."
SCOPE = (
    'scope = Task(name="scope", description="Scope the post.", expected_output="a scope", agent=writer, context=[])\n'
)


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        yield running


def _env(server: LLMServer, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CREWPOINT_") and k != "OPENAI_API_KEY"}
    env.update(PATH=os.pathsep.join([BIN, env.get("PATH", "")]), NO_COLOR="1", CHANGES_TEST_LLM=server.base_url)
    return {**env, **extra}


def killed(tmp_path: Path, server: LLMServer) -> tuple[Path, str]:
    """The program run until its first two tasks are checkpointed, then killed: the project and that checkpoint."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "prog.py").write_text(PROGRAM + "\ncrew.kickoff()\n", encoding="utf-8")
    store = project / ".checkpoints"
    kill_when(
        [sys.executable, "prog.py"],
        project,
        lambda: 2 in done_counts(store),
        "two tasks checkpointed",
        _env(server, HOLD="1"),
    )
    (project / "prog.py").write_text(PROGRAM, encoding="utf-8")
    newest = ops.list_checkpoints(str(store))[0]
    assert newest.tasks_done == 2
    server.requests.clear()
    return project, newest.id


def crewpoint(project: Path, server: LLMServer, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["crewpoint", "checkpoint", *args], cwd=project, env=_env(server), capture_output=True, text=True, timeout=180
    )


def called(server: LLMServer) -> list[str]:
    """The tasks whose prompts reached the model server, in order."""
    found = []
    for request in server.requests:
        first = request.body["messages"][-1]["content"].split("\n", 1)[0].removeprefix("Current task: ")
        found.append(DESCRIPTIONS.get(first, first))
    return found


def edit_and_resume(tmp_path: Path, server: LLMServer, edits: list[tuple[str, str]]) -> tuple[dict, list[str], dict]:
    """Kill the program, edit it, and resume with --app: the dry run's JSON plan, the tasks that called the model,
    and each task's output in the newest checkpoint, by name."""
    project, checkpoint = killed(tmp_path, server)
    source = (project / "prog.py").read_text(encoding="utf-8")
    for old, new in edits:
        assert old in source, old
        source = source.replace(old, new)
    (project / "prog.py").write_text(source, encoding="utf-8")
    dry = crewpoint(project, server, "resume", checkpoint, "--app", "prog.py:crew", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert server.requests == []  # a dry run calls no model
    ran = crewpoint(project, server, "resume", checkpoint, "--app", "prog.py:crew")
    assert ran.returncode == 0, ran.stderr
    body = ops.load(ops.list_checkpoints(str(project / ".checkpoints"))[0].id, str(project / ".checkpoints")).body
    outputs = {t["name"]: t["output"]["raw"] for t in body["entity"]["tasks"]}
    for task in body["entity"]["tasks"]:  # every output is its own task's: the echo of its own prompt
        assert task["output"]["raw"].startswith(f"echo: Current task: {task['description']}"), task["name"]
    return json.loads(dry.stdout), called(server), outputs


def verdicts(plan: dict) -> list[tuple[str, str, bool]]:
    return [(t["name"], t["verdict"], t["runs"]) for t in plan["tasks"]]


def test_an_unchanged_program_resumes_with_only_the_unfinished_task(tmp_path: Path, server: LLMServer) -> None:
    plan, calls, _ = edit_and_resume(tmp_path, server, [])
    assert plan["unchanged"] is True and plan["notes"] == []
    assert verdicts(plan) == [("research", "kept", False), ("outline", "kept", False), ("write", "kept", True)]
    assert calls == ["write"]


@pytest.mark.parametrize(
    ("edit", "changed", "reason", "calls"),
    [
        (("Research the topic.", "Research the topic in depth."), "research", "description changed", ["research"]),
        (
            ('expected_output="an outline"', 'expected_output="a short outline"'),
            "outline",
            "expected output changed",
            ["outline"],
        ),
        (('goal="find facts"', 'goal="find sources"'), "research", "agent goal changed", ["research"]),
        (
            ('backstory="careful", llm=Served(model="gpt-4o-mini"', 'backstory="careful", llm=Served(model="gpt-4o"'),
            "research",
            "model changed",
            ["research"],
        ),
        ((", tools=[]", ", tools=[lookup]"), "outline", "tools changed", ["outline"]),
        (
            ('"an outline", agent=writer, context=[]', '"an outline", agent=writer, context=[research]'),
            "outline",
            "context changed",
            ["outline"],
        ),
    ],
    ids=["description", "expected-output", "agent-goal", "model", "tool", "context"],
)
def test_a_changed_task_re_runs_with_what_reads_it_and_nothing_else(
    tmp_path: Path, server: LLMServer, edit: tuple[str, str], changed: str, reason: str, calls: list[str]
) -> None:
    plan, made, _ = edit_and_resume(tmp_path, server, [edit])
    by_name = {t["name"]: t for t in plan["tasks"]}
    assert by_name[changed]["verdict"] == "changed" and by_name[changed]["runs"] is True
    assert reason in by_name[changed]["reasons"]
    other = "outline" if changed == "research" else "research"
    assert (by_name[other]["verdict"], by_name[other]["runs"]) == ("kept", False)
    assert by_name["write"]["runs"] is True
    assert plan["to_run"] == [n for n in ("research", "outline", "write") if by_name[n]["runs"]]
    assert made == [*calls, "write"]  # the unchanged finished task never calls the model again
    if reason == "model changed":
        assert [r.body["model"] for r in server.requests] == ["gpt-4o", "gpt-4o-mini"]


def test_an_inserted_task_runs_and_the_others_keep_their_outputs(tmp_path: Path, server: LLMServer) -> None:
    plan, calls, outputs = edit_and_resume(
        tmp_path,
        server,
        [
            ("crew = Crew(", SCOPE + "crew = Crew("),
            ("tasks=[research, outline, write]", "tasks=[scope, research, outline, write]"),
        ],
    )
    assert verdicts(plan) == [
        ("scope", "new", True),
        ("research", "moved", False),
        ("outline", "moved", False),
        ("write", "moved", True),
    ]
    assert plan["tasks"][1]["reasons"] == ["moved from 1 to 2"]
    assert calls == ["scope", "write"]
    assert set(outputs) == {"scope", "research", "outline", "write"}


def test_a_removed_task_is_dropped_and_its_output_is_not_used(tmp_path: Path, server: LLMServer) -> None:
    plan, calls, outputs = edit_and_resume(
        tmp_path,
        server,
        [
            ("tasks=[research, outline, write]", "tasks=[research, write]"),
            ("context=[research, outline]", "context=[research]"),
        ],
    )
    assert verdicts(plan) == [("research", "kept", False), ("write", "moved", True), ("outline", "dropped", False)]
    assert plan["tasks"][2]["reasons"] == ["not in the program", "its saved output is not used"]
    assert calls == ["write"]
    assert set(outputs) == {"research", "write"}


def test_a_renamed_task_is_matched_by_its_fingerprint(tmp_path: Path, server: LLMServer) -> None:
    plan, calls, outputs = edit_and_resume(tmp_path, server, [('name="research"', 'name="gather"')])
    assert verdicts(plan) == [("gather", "kept", False), ("outline", "kept", False), ("write", "kept", True)]
    assert plan["tasks"][0]["reasons"] == ["renamed from 'research'"]
    assert calls == ["write"]
    assert outputs["gather"].startswith("echo: Current task: Research the topic.")


def test_reordered_tasks_keep_their_own_outputs(tmp_path: Path, server: LLMServer) -> None:
    plan, calls, outputs = edit_and_resume(
        tmp_path, server, [("tasks=[research, outline, write]", "tasks=[outline, research, write]")]
    )
    assert verdicts(plan) == [("outline", "moved", False), ("research", "moved", False), ("write", "kept", True)]
    assert plan["to_run"] == ["write"]
    assert calls == ["write"]
    assert outputs["outline"].startswith("echo: Current task: Outline the post.")


def test_keep_rerun_and_strict_choose_what_runs(tmp_path: Path, server: LLMServer) -> None:
    project, checkpoint = killed(tmp_path, server)
    source = (project / "prog.py").read_text(encoding="utf-8")
    (project / "prog.py").write_text(source.replace("Research the topic.", "Research the topic in depth."))
    strict = crewpoint(project, server, "resume", checkpoint, "--app", "prog.py:crew", "--strict")
    assert strict.returncode == 2
    assert strict.stderr.startswith("crewpoint: --strict: the program changed since checkpoint ")
    assert "research: changed" in strict.stderr
    dry = crewpoint(
        project,
        server,
        "resume",
        checkpoint,
        "--app",
        "prog.py:crew",
        "--keep",
        "research",
        "--rerun",
        "outline",
        "--dry-run",
    )
    assert dry.returncode == 0, dry.stderr
    assert "  1. research: changed (description changed; its saved output kept (--keep))" in dry.stdout
    assert "  2. outline: kept, runs (re-run asked (--rerun))" in dry.stdout
    assert "tasks to run: 2. outline, 3. write" in dry.stdout
    unknown = crewpoint(project, server, "resume", checkpoint, "--app", "prog.py:crew", "--keep", "nope", "--dry-run")
    assert unknown.returncode == 2
    assert "no task 'nope' in the program" in unknown.stderr
    ran = crewpoint(project, server, "resume", checkpoint, "--app", "prog.py:crew", "--keep", "research")
    assert ran.returncode == 0, ran.stderr
    assert "  1. research: changed (description changed; its saved output kept (--keep))" in ran.stderr
    assert called(server) == ["write"]


def test_the_readme_plan_is_what_the_dry_run_prints(tmp_path: Path, server: LLMServer) -> None:
    """README's "When your program changed": a task inserted first and one description changed since the crash."""
    project, checkpoint = killed(tmp_path, server)
    source = (project / "prog.py").read_text(encoding="utf-8")
    source = source.replace("crew = Crew(", SCOPE + "crew = Crew(").replace("Research the topic.", CHANGED)
    source = source.replace("tasks=[research, outline, write]", "tasks=[scope, research, outline, write]")
    (project / "prog.py").write_text(source, encoding="utf-8")
    dry = crewpoint(project, server, "resume", checkpoint, "--app", "prog.py:crew", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    printed = dry.stdout.split("plan:\n", 1)[1].split("model:", 1)[0].splitlines()
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    shown = readme.split("\nplan:\n", 1)[1].split("\nmodel:", 1)[0].splitlines()
    assert shown == printed
    assert "  2. research: changed, runs (description changed; moved from 1 to 2)" in printed


def test_a_task_edited_in_one_process_gets_the_fingerprint_of_its_new_parts() -> None:
    """Each part's hash is remembered by its value: an edit between two runs of one process still changes the
    fingerprint part by part, an edit back gives the first one again, and each is what a fresh hash gives."""
    from crewpoint import Agent, Crew, Task
    from crewpoint.checkpoint.changes import changed_parts, fingerprint
    from crewpoint.checkpoint.crew_changes import task_fingerprint, task_parts

    agent = Agent(role="Writer", goal="Write", backstory="Experienced")
    tasks = [Task(description=f"Step {i}", expected_output="One line", agent=agent) for i in range(3)]
    crew = Crew(agents=[agent], tasks=tasks, checkpoint=False)
    first = task_fingerprint(crew, 2)
    assert first == fingerprint(task_parts(crew, 2)) == task_fingerprint(crew, 2)

    agent.role, tasks[2].description = "Editor", "Step 1"
    edited = task_fingerprint(crew, 2)
    assert changed_parts(first, edited) == ["description", "role"]
    assert edited == fingerprint(task_parts(crew, 2))
    assert edited["description"] == task_fingerprint(crew, 1)["description"]

    agent.role, tasks[2].description = "Writer", "Step 2"
    assert task_fingerprint(crew, 2) == first
