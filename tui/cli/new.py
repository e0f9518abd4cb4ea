"""``crewpoint new NAME``: write a runnable CrewAI-style project (``crewpoint.project``) into the folder NAME.

The project: ``pyproject.toml`` naming its crew (``[tool.crewpoint] app``), a package with ``config/agents.yaml``,
``config/tasks.yaml``, ``crew.py`` (a ``@CrewBase`` crew of two tasks on the offline model, the second reviewed by a
person: ``human_input: true``) and ``main.py`` (runs it, checkpointing into ``.checkpoints/`` inside the project),
and a README saying the commands that run and resume it. Nothing is written over: a folder that exists and holds
anything is refused.
"""

from __future__ import annotations

import keyword
import os
import re
import sys
from pathlib import Path

import click

from crewpoint.tui.cli.errors import fail
from crewpoint.tui.cli.root import main

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")

PYPROJECT = """\
[project]
name = "__DIST__"
version = "0.1.0"
description = "A crewpoint crew: agents and tasks in YAML, durable with checkpoints."
requires-python = ">=3.11"
dependencies = ["crewpoint"]

[build-system]
requires = ["setuptools>=77"]
build-backend = "setuptools.build_meta"

[tool.setuptools]
packages = ["__PACKAGE__"]

[tool.setuptools.package-data]
"__PACKAGE__" = ["config/*.yaml"]

# The program `crewpoint checkpoint resume`, `fork` and `answer` run when started in this folder: the crew of
# __CLASS__ (its code, its hooks), with the checkpoint's state.
[tool.crewpoint]
app = "__PACKAGE__.crew:__CLASS__"
"""

AGENTS = """\
# Each agent: role, goal and backstory; {topic} is filled from the run's inputs.
# llm: offline is crewpoint's embedded model (no network); put a model name here to use a real one.
researcher:
  role: "{topic} researcher"
  goal: Gather the key facts about {topic}
  backstory: You read widely and keep only what is true and useful.
  llm: offline

writer:
  role: Writer
  goal: Turn the research on {topic} into a short, clear draft
  backstory: You write plainly for busy readers.
  llm: offline
"""

TASKS = """\
# Each task: description, expected_output and the agent (an @agent method of the crew) that does it.
research_task:
  description: Research {topic} and list the main facts.
  expected_output: A list of five facts about {topic}.
  agent: researcher

write_task:
  description: Write a short draft about {topic} from the research.
  expected_output: Two paragraphs about {topic}.
  agent: writer
  context: [research_task]
  # The feedback step: a person reviews the draft; the writer revises until they accept.
  human_input: true
"""

CREW = '''\
"""The __PACKAGE__ crew: a researcher gathers facts, a writer drafts, a person reviews the draft."""

from typing import Any

from crewpoint import Agent, Crew, Task
from crewpoint.project import CrewBase, agent, before_kickoff, crew, task


@CrewBase
class __CLASS__:
    """Agents and tasks come from config/agents.yaml and config/tasks.yaml, beside this file."""

    agents_config = "config/agents.yaml"
    tasks_config = "config/tasks.yaml"

    @agent
    def researcher(self) -> Agent:
        return Agent(config=self.agents_config["researcher"])

    @agent
    def writer(self) -> Agent:
        return Agent(config=self.agents_config["writer"])

    @task
    def research_task(self) -> Task:
        return Task(config=self.tasks_config["research_task"])

    @task
    def write_task(self) -> Task:
        return Task(config=self.tasks_config["write_task"])

    @before_kickoff
    def default_topic(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Runs as each run starts (a resumed one too): the inputs it returns are the run's."""
        return {"topic": "AI agents", **inputs}

    @crew
    def crew(self) -> Crew:
        return Crew(agents=self.agents, tasks=self.tasks)
'''

MAIN = '''\
"""Run the crew: ``python -m __PACKAGE__.main [TOPIC]`` in the project folder.

Checkpoints go to .checkpoints/ in the project folder. In a terminal the draft is reviewed there (Enter accepts);
otherwise the run waits for the review and exits with 75: ``crewpoint checkpoint answer`` (or the app) answers it.
"""

import sys
from pathlib import Path

from crewpoint import CheckpointConfig, CrewOutput

from __PACKAGE__.crew import __CLASS__

STORE = Path(__file__).resolve().parent.parent / ".checkpoints"
WAITING = 75  # the run waits for a person: answer it, and it goes on from its checkpoint


def run() -> int:
    crew = __CLASS__().crew()
    crew.checkpoint = CheckpointConfig(location=str(STORE))
    inputs = {"topic": " ".join(sys.argv[1:])} if sys.argv[1:] else {}
    result = crew.kickoff(inputs=inputs)
    if not isinstance(result, CrewOutput):  # waiting for the review: it says how to answer
        print(result)
        return WAITING
    print(result.raw)
    return 0


if __name__ == "__main__":
    sys.exit(run())
'''

README = """\
# __DIST__

A [crewpoint](https://pypi.org/project/crewpoint/) crew written as a project: the agents are in
`__PACKAGE__/config/agents.yaml`, the tasks in `__PACKAGE__/config/tasks.yaml`, the crew in `__PACKAGE__/crew.py`
(`@CrewBase`). It runs on the offline model; a person reviews the draft (`human_input: true`). Every finished task
is a checkpoint in `.checkpoints/`.

Run it, in this folder:

```bash
python -m __PACKAGE__.main "tide pools"
```

Resume it from a checkpoint (after a crash, Ctrl+C, or while it waits for the review; `crewpoint checkpoint list`
shows the ids); finished tasks are not run again:

```bash
crewpoint checkpoint resume ID
```

`[tool.crewpoint] app` in `pyproject.toml` names the crew (`__PACKAGE__.crew:__CLASS__`), so a resume run here runs
your code, its `@before_kickoff` and `@after_kickoff` hooks included. A run waiting for the review exits with 75;
answer it with `crewpoint checkpoint answer ID --accept` (or `--feedback "..."`), or in the app:
`crewpoint checkpoint`.
"""

GITIGNORE = """\
.checkpoints/
__pycache__/
"""


def project_names(name: str) -> tuple[str, str]:
    """The package and the crew class of project ``name``: ``my-notes`` → ``my_notes``, ``MyNotesCrew``."""
    package = name.replace("-", "_").lower()
    words = [w for w in package.split("_") if w]
    cls = "".join(w[:1].upper() + w[1:] for w in words)
    return package, cls if cls.endswith("Crew") else cls + "Crew"


def check_name(name: str) -> str | None:
    """Why ``name`` cannot name a project, or None."""
    if not _NAME.match(name):
        return (
            f"{name!r} is not a project name: use letters, digits, '_' or '-', starting with a letter (my_crew, notes)"
        )
    package, _ = project_names(name)
    if keyword.iskeyword(package):
        return f"{name!r} is a Python keyword and cannot name a package: choose another project name"
    if package in sys.stdlib_module_names or package == "crewpoint":
        return f"{name!r} would hide a Python module of the same name ({package}): choose another project name"
    return None


def write_project(folder: Path, name: str) -> list[Path]:
    """Write project ``name`` into ``folder`` (which must not exist or be empty); returns the files written."""
    package, cls = project_names(name)
    files = {
        "pyproject.toml": PYPROJECT,
        "README.md": README,
        ".gitignore": GITIGNORE,
        f"{package}/__init__.py": "",
        f"{package}/config/agents.yaml": AGENTS,
        f"{package}/config/tasks.yaml": TASKS,
        f"{package}/crew.py": CREW,
        f"{package}/main.py": MAIN,
    }
    written = []
    for relative, template in files.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        text = template.replace("__DIST__", name).replace("__PACKAGE__", package).replace("__CLASS__", cls)
        with open(path, "x", encoding="utf-8") as handle:  # never over anything
            handle.write(text)
        written.append(path)
    return written


@main.command(name="new")
@click.argument("name")
def new(name: str) -> None:
    """Write a runnable crew project into the folder NAME: agents and tasks in YAML, a @CrewBase crew with a
    feedback step, and a README with the commands that run and resume it. Exit 2 for a bad name or a folder that
    is not empty."""
    problem = check_name(name)
    if problem is not None:
        fail(problem)
    folder = Path(name)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        fail(f"{name}: already exists and is not an empty folder: choose another name or remove it")
    try:
        write_project(folder, name)
    except OSError as exc:
        fail(f"{name}: cannot write the project: {exc.strerror or exc}")
    package, _ = project_names(name)
    click.echo(f"wrote {os.path.join(name, '')}: run it with")
    click.echo(f"  cd {name} && python -m {package}.main")
