"""CrewAI-style projects (``crewpoint.project``): YAML agents and tasks, ``{placeholder}`` inputs, methods made once,
kickoff hooks, and a ``@CrewBase`` project killed with SIGKILL, then resumed through the CLI with ``--app
module:MyCrew`` (its hooks run) and without it (a warning names the hooks, which do not run)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pytest
from support.cli import CREWPOINT
from support.processes import done_counts, kill_when, user_env, words

from crewpoint import Crew
from crewpoint.checkpoint import ops
from crewpoint.checkpoint.schema import ENTITY
from crewpoint.project import ConfigKeyError, ProjectError, hooks_not_run

AGENTS = """\
researcher:
  role: "{topic} researcher"
  goal: Find facts about {topic}
  backstory: You read a lot.
writer:
  role: Writer
  goal: Write about {topic}
  backstory: You write well.
"""

TASKS = """\
research_task:
  description: Research {topic}
  expected_output: Three facts about {topic}
  agent: researcher
write_task:
  description: Write a paragraph on {topic}
  expected_output: A paragraph
  agent: writer
  context: [research_task]
"""

CLASS = """
from crewpoint import Agent, Crew, Task
from crewpoint.project import CrewBase, after_kickoff, agent, before_kickoff, crew, task

EVENTS = []


@CrewBase
class MyCrew:
    @agent
    def researcher(self):
        return Agent(config=self.agents_config["researcher"])

    @agent
    def writer(self):
        return Agent(config=self.agents_config["writer"], goal="Write plainly")

    @task
    def research_task(self):
        return Task(config=self.tasks_config["research_task"])

    @task
    def write_task(self):
        return Task(config=self.tasks_config["write_task"])

    @before_kickoff
    def prepare(self, inputs):
        EVENTS.append(("prepare", dict(inputs)))
        return {**inputs, "audience": "kids"}

    @before_kickoff
    def check(self, inputs):
        EVENTS.append(("check", dict(inputs)))

    @after_kickoff
    def report(self, result):
        EVENTS.append(("report", result.raw))
        return "reported: " + result.raw

    @after_kickoff
    def seal(self, result):
        EVENTS.append(("seal", result))

    @crew
    def crew(self):
        return Crew(agents=self.agents, tasks=self.tasks)
"""


def _load(folder: Path, source: str = CLASS, agents: str = AGENTS, tasks: str = TASKS) -> Any:
    """Write a project (module, config/agents.yaml, config/tasks.yaml) into ``folder`` and import its module."""
    (folder / "config").mkdir(parents=True, exist_ok=True)
    (folder / "config" / "agents.yaml").write_text(agents, encoding="utf-8")
    (folder / "config" / "tasks.yaml").write_text(tasks, encoding="utf-8")
    path = folder / "project_module.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"project_module_{abs(hash(folder))}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # as an import does: the class's file is found through its module
    spec.loader.exec_module(module)
    return module


def _shown(path: Path) -> str:
    """How an error names a file: relative to the working folder when inside it."""
    return os.path.relpath(path)


def test_yaml_config_fills_agents_and_tasks_and_names_link_them(tmp_path: Path) -> None:
    module = _load(tmp_path)
    project = module.MyCrew()
    assert isinstance(project.agents_config["researcher"], dict)
    assert module.MyCrew.agents_config == "config/agents.yaml"  # the class keeps the path it was given
    researcher, writer = project.agents
    assert researcher.role == "{topic} researcher" and researcher.backstory == "You read a lot."
    assert writer.goal == "Write plainly"  # given explicitly: the YAML's goal does not replace it
    research, write = project.tasks
    assert research.agent is researcher and write.agent is writer
    assert write.context == [research]
    assert [t.name for t in project.tasks] == ["research_task", "write_task"]  # the methods' names


def test_agents_and_tasks_are_made_once_per_instance_in_declaration_order(tmp_path: Path) -> None:
    module = _load(tmp_path)
    project = module.MyCrew()
    assert project.research_task() is project.research_task()
    assert project.tasks[0] is project.research_task() and project.agents[1] is project.writer()
    assert project.crew().tasks == project.tasks
    other = module.MyCrew()
    assert other.researcher() is not project.researcher()


def test_a_run_interpolates_inputs_and_runs_the_hooks_in_order_once(tmp_path: Path) -> None:
    module = _load(tmp_path)
    crew = module.MyCrew().crew()
    assert crew.name == "MyCrew"
    result = crew.kickoff(inputs={"topic": "tides"})
    events = module.EVENTS
    assert [name for name, _ in events] == ["prepare", "check", "report", "seal"]
    assert events[0][1] == {"topic": "tides"}
    assert events[1][1] == {"topic": "tides", "audience": "kids"}  # the first hook's inputs reach the second
    assert crew.inputs == {"topic": "tides", "audience": "kids"}
    raw = crew.tasks[-1].output.raw
    assert events[2][1] == raw and events[3][1] == "reported: " + raw and result == "reported: " + raw
    assert crew.tasks[0].output.description == "Research tides"
    assert crew.tasks[0].output.expected_output == "Three facts about tides"
    assert crew.to_state()["kickoff_hooks"] == {
        "class": "MyCrew",
        "before_kickoff": ["prepare", "check"],
        "after_kickoff": ["report", "seal"],
    }


def test_a_crew_rebuilt_from_its_state_warns_that_the_hooks_are_not_run(tmp_path: Path) -> None:
    module = _load(tmp_path)
    crew = module.MyCrew().crew()
    crew.kickoff(inputs={"topic": "tides"})
    module.EVENTS.clear()
    with pytest.warns(UserWarning) as caught:
        rebuilt = Crew.from_state(ENTITY.check(crew.to_state(), ("entity",)))
    (message,) = [str(w.message) for w in caught if "not run" in str(w.message)]
    assert message == (
        "not run: before_kickoff hooks prepare(), check(); after_kickoff hooks report(), seal() of MyCrew live in "
        "the program, not the checkpoint; pass --app to run them"
    )
    rebuilt.tasks[-1].output = None
    rebuilt.kickoff()
    assert module.EVENTS == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Crew.planning_copy(ENTITY.check(crew.to_state(), ("entity",)), {})  # planning is not a rebuild: no warning


def test_hook_names_from_a_checkpoint_are_shown_only_when_they_are_names() -> None:
    saved = {"class": "X\x1b[31m", "before_kickoff": ["ok", "rm -rf /;", 3], "after_kickoff": "nope"}
    assert hooks_not_run(saved) == "not run: before_kickoff hook ok() live in the program, not the checkpoint; " + (
        "pass --app to run them"
    )
    assert hooks_not_run({"before_kickoff": ["\n"]}) is None and hooks_not_run("x") is None


def test_bad_yaml_is_one_line_naming_the_file(tmp_path: Path) -> None:
    module = _load(tmp_path, agents="researcher:\n  role: [unclosed\n")
    with pytest.raises(ProjectError) as caught:
        module.MyCrew().researcher()
    text = str(caught.value)
    assert "\n" not in text
    assert text.startswith(_shown(tmp_path / "config" / "agents.yaml") + ": not valid YAML at line 3")


def test_a_missing_key_is_one_line_naming_the_file_and_key(tmp_path: Path) -> None:
    module = _load(tmp_path, agents=AGENTS.replace("writer:", "editor:"))
    with pytest.raises(KeyError) as caught:
        module.MyCrew().writer()
    assert isinstance(caught.value, ConfigKeyError)
    assert str(caught.value) == (
        f"{_shown(tmp_path / 'config' / 'agents.yaml')}: no agent named 'writer' (it has 'researcher', 'editor')"
    )


def test_a_task_naming_an_agent_without_a_method_says_which(tmp_path: Path) -> None:
    module = _load(tmp_path, tasks=TASKS.replace("agent: writer", "agent: editor"))
    with pytest.raises(ProjectError) as caught:
        module.MyCrew().crew()
    assert str(caught.value) == (
        f"{_shown(tmp_path / 'config' / 'tasks.yaml')}: task 'write_task': agent 'editor' is not an @agent method of "
        "MyCrew"
    )


def test_an_entry_that_is_not_settings_is_refused(tmp_path: Path) -> None:
    module = _load(tmp_path, tasks="research_task: just a string\n")
    with pytest.raises(ProjectError, match=r"tasks.yaml: task 'research_task': expected a mapping of settings"):
        module.MyCrew().research_task()


def test_task_config_settings_crewpoint_does_not_use_are_named(tmp_path: Path) -> None:
    module = _load(tmp_path, tasks=TASKS.replace("  agent: researcher\n", "  agent: researcher\n  markdown: true\n"))
    with pytest.warns(UserWarning, match="Task ignores the setting.s. markdown"):
        module.MyCrew().research_task()


# -- a project run killed, then resumed through the CLI ------------------------------------------------------

PROJECT_CREW = '''
import os
import threading

from crewpoint import Agent, Crew, Task
from crewpoint.llm import BaseLLM
from crewpoint.project import CrewBase, after_kickoff, agent, before_kickoff, crew, llm, task

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def log(name, line):
    with open(os.path.join(HERE, name), "a", encoding="utf-8") as f:
        f.write(line + "\\n")


class GatedLLM(BaseLLM):
    """Answers at once; the second task's call waits for a release file the first run never gets."""

    model: str = "gated"

    def call(self, messages, **kwargs):
        task = messages[1]["content"].split("Current task: ", 1)[1].split()[0]
        log("calls.log", task)
        if task == "Draft":
            while not os.path.exists(os.path.join(HERE, "release")):
                threading.Event().wait(0.02)
        return "Final Answer: done " + task


@CrewBase
class MyCrew:
    @llm
    def gated(self):
        return GatedLLM()

    @agent
    def writer(self):
        return Agent(config=self.agents_config["writer"])

    @task
    def outline(self):
        return Task(config=self.tasks_config["outline"])

    @task
    def draft(self):
        return Task(config=self.tasks_config["draft"])

    @before_kickoff
    def prepare(self, inputs):
        log("hooks.log", "before")
        return inputs

    @after_kickoff
    def report(self, result):
        log("hooks.log", "after")
        return result

    @crew
    def crew(self):
        return Crew(agents=self.agents, tasks=self.tasks)
'''

PROJECT_MAIN = """
import os

from crewpoint import CheckpointConfig
from proj.crew import HERE, MyCrew


def run():
    crew = MyCrew().crew()
    crew.checkpoint = CheckpointConfig(location=os.path.join(HERE, "store"))
    print("RESULT", crew.kickoff(inputs={"topic": "tides"}).raw)


if __name__ == "__main__":
    run()
"""


@pytest.fixture
def killed_project(tmp_path: Path) -> Path:
    """A ``@CrewBase`` project killed with SIGKILL once its first task's checkpoint was written."""
    project = tmp_path / "project"
    package = project / "proj"
    (package / "config").mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "crew.py").write_text(PROJECT_CREW, encoding="utf-8")
    (package / "main.py").write_text(PROJECT_MAIN, encoding="utf-8")
    (package / "config" / "agents.yaml").write_text(
        "writer:\n  role: Writer\n  goal: Write about {topic}\n  llm: gated\n", encoding="utf-8"
    )
    (package / "config" / "tasks.yaml").write_text(
        textwrap.dedent(
            """\
            outline:
              description: Outline {topic}
              expected_output: An outline
              agent: writer
            draft:
              description: Draft {topic}
              expected_output: A draft
              agent: writer
            """
        ),
        encoding="utf-8",
    )
    kill_when(
        [sys.executable, "-m", "proj.main"],
        project,
        # parked at the gate: the first task checkpointed, the second task's call made (its checkpoint is written by
        # a background writer, so it may be on disk before that call is)
        lambda: 1 in done_counts(project / "store") and words(project / "calls.log") == ["Outline", "Draft"],
        "the project's first checkpoint and its second call",
        user_env(),
    )
    assert words(project / "hooks.log") == ["before"]
    assert words(project / "calls.log") == ["Outline", "Draft"]
    (project / "release").write_text("", encoding="utf-8")
    return project


def _first_id(project: Path) -> str:
    (meta,) = [m for m in ops.list_checkpoints(str(project / "store")) if not m.damaged]
    return meta.id


def test_a_killed_project_resumes_through_the_cli_with_its_hooks(killed_project: Path) -> None:
    first = _first_id(killed_project)
    origin = ops.load(first, str(killed_project / "store")).body["origin"]
    assert (origin["module"], origin["attr"]) == ("proj.crew", "MyCrew")
    proc = subprocess.run(
        [CREWPOINT, "checkpoint", "resume", first, "--location", "store", "--app", "proj.crew:MyCrew"],
        cwd=killed_project,
        env=user_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "done Draft" in proc.stdout
    assert words(killed_project / "hooks.log") == ["before", "before", "after"]
    assert words(killed_project / "calls.log") == ["Outline", "Draft", "Draft"]  # the outline never ran again
    assert "not run" not in proc.stderr
    assert sorted(done_counts(killed_project / "store")) == [1, 2]


def test_a_killed_project_resumed_without_its_program_names_the_hooks_it_does_not_run(
    killed_project: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = subprocess.run(
        [CREWPOINT, "checkpoint", "resume", _first_id(killed_project), "--location", str(killed_project / "store")],
        cwd=elsewhere,
        # the checkpoint is trusted to name its model's class (proj.crew.GatedLLM); its hooks are not in it
        env=user_env(CREWPOINT_DESERIALIZE_CALLBACKS="1", PYTHONPATH=str(killed_project)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "done Draft" in proc.stdout
    (line,) = [line for line in proc.stderr.splitlines() if "not run:" in line]
    assert line.endswith(
        "not run: before_kickoff hook prepare(); after_kickoff hook report() of MyCrew live in the program, "
        "not the checkpoint; pass --app to run them"
    )
    assert words(killed_project / "hooks.log") == ["before"]
    assert words(killed_project / "calls.log") == ["Outline", "Draft", "Draft"]


def test_a_broken_config_stops_a_resume_through_the_cli_in_one_line(killed_project: Path) -> None:
    tasks = killed_project / "proj" / "config" / "tasks.yaml"
    tasks.write_text(tasks.read_text(encoding="utf-8").replace("draft:", "drafting:"), encoding="utf-8")
    proc = subprocess.run(
        [
            CREWPOINT,
            "checkpoint",
            "resume",
            _first_id(killed_project),
            "--location",
            "store",
            "--app",
            "proj.crew:MyCrew",
        ],
        cwd=killed_project,
        env=user_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr == (
        "crewpoint: --app 'proj.crew:MyCrew': making the crew of MyCrew failed: "
        f"{os.path.join('proj', 'config', 'tasks.yaml')}: no task named 'draft' (it has 'outline', 'drafting')\n"
    )
    assert words(killed_project / "hooks.log") == ["before"]  # nothing ran


TOOLS = '''
from crewpoint import Agent, Crew, Task
from crewpoint.project import CrewBase, agent, crew, task, tool
from crewpoint.tools import tool as make_tool

USED = []


@make_tool
def lookup(query: str) -> str:
    """Look a topic up in the notes."""
    USED.append(query)
    return "notes on " + query


@CrewBase
class ToolCrew:
    @tool
    def notes(self):
        return lookup

    @agent
    def researcher(self):
        return Agent(config=self.agents_config["researcher"])

    @task
    def research_task(self):
        return Task(config=self.tasks_config["research_task"])

    @crew
    def crew(self):
        return Crew(agents=self.agents, tasks=self.tasks)
'''


def test_tools_named_in_yaml_are_the_tool_methods_objects(tmp_path: Path) -> None:
    agents = "researcher:\n  role: Researcher\n  goal: Find facts\n  llm: offline\n  tools: [notes]\n"
    tasks = "research_task:\n  description: Use lookup on {topic}\n  expected_output: facts\n  agent: researcher\n"
    module = _load(tmp_path, TOOLS, agents, tasks)
    project = module.ToolCrew()
    assert project.researcher().tools == [module.lookup]
    project.crew().kickoff(inputs={"topic": "tides"})
    assert module.USED  # the offline model called the tool the YAML named
    broken = _load(tmp_path / "broken", TOOLS, agents.replace("[notes]", "[search]"), tasks)
    with pytest.raises(ProjectError, match=r"agent 'researcher': tool 'search' is not an @tool method of ToolCrew"):
        broken.ToolCrew().researcher()
